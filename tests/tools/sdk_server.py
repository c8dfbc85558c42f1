"""Test server on the real `mcp` SDK (runs in the side virtual environment): tools echo, add and
slow (reports progress), over stdio."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("mcptap-test-sdk-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return f"done after {steps} steps"


if __name__ == "__main__":
    server.run("stdio")
