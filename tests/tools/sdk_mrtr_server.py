"""Test server on the real `mcp` SDK (runs in the side virtual environment) whose tool `greet`
asks the client for a name before it answers: under 2026-07-28 the SDK answers the first call
`input_required` (an elicitation and a sealed requestState) and completes the retry, over stdio."""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer("mcptap-test-mrtr-server")


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Who is there?", Name)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the client names."""
    return f"hello {who.name}"


if __name__ == "__main__":
    server.run("stdio")
