"""`mcptap mcp`: an MCP server over a database, read-only (analyzer/mcpface/)."""

from __future__ import annotations

from mcptap import extras
from mcptap.cli.common import DbOption, DEFAULT_DB, app, one_line_errors


@app.command("mcp", short_help="Serve a database to an agent as an MCP server (stdio), read-only.")
def mcp_server(db: DbOption = DEFAULT_DB) -> None:
    """Serve the recording to an MCP host over stdio, read-only: tools to list sessions, search
    frames with the display filter, list findings with their explanation and spec reference, show
    a frame with its pair, and summarise a session. Answers are paged and bounded. Needs
    `mcptap[mcp]` (the official `mcp` SDK). Put it in a host's config as a stdio server.

    Example:  mcptap mcp --db ~/mcp.db
    """
    with one_line_errors():
        extras.need("mcp", "mcptap mcp")
        from mcptap.mcpface import server

        server.serve(db)
