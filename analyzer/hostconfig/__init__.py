"""A host's own MCP config files (Claude Desktop, Claude Code, Cursor, VS Code): read with their
comments kept (jsonc), where their servers are (hosts), and rewritten to record every stdio server
through `mcptap record` and back (wrap: the files; entry: one server's exact edits; replace: the
atomic writes)."""
