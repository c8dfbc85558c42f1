"""Test server on the real `mcp` SDK for the 2026-07-28 request headers (runs in the side virtual
environment). Usage: sdk_header_server.py PORT. Tools: echo; sql (its `region` argument marked
`x-mcp-header: Region`, mirrored by clients into the Mcp-Param-Region header)."""

import sys
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import MCPServer

server = MCPServer("mcptap-test-header-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def sql(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], query: str) -> str:
    """Pretend to run a query in a region (the region is mirrored into an HTTP header)."""
    return f"{query} ran in {region}"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response=True)
