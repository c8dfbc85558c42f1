"""The bundled demo: a stdlib MCP server and client, and `mcptap demo` (run.py)."""
