"""`mcptap mcp`: an MCP server (stdio) over a recording, read-only, so that an agent can read its
own traffic: list sessions, search frames with the display filter, read findings with their
explanation and spec reference, show one frame with its pair, and summarise a session. `reading`
holds what each tool answers (plain functions over a read-only connection, no SDK); `server`
binds them to the official `mcp` SDK (the `mcptap[mcp]` extra), which nothing else imports."""
