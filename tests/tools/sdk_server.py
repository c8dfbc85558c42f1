"""Test server on the real `mcp` SDK (runs in the side virtual environment): tools echo, add,
slow (reports progress) and nap (reports progress, then takes `seconds`: a call slow enough for
its client to cancel), over stdio. `sdk_server.py --echo-description TEXT`: echo described so (a
server with one tool changed, for `mcptap diff`; the SDK's stdio client gives a server only a
few environment variables, so it is an argument)."""

import sys

import anyio

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("mcptap-test-sdk-server")


ECHO_DESCRIPTION = sys.argv[sys.argv.index("--echo-description") + 1] if "--echo-description" in sys.argv else None


@server.tool(description=ECHO_DESCRIPTION)
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


@server.tool()
async def nap(seconds: float, ctx: Context) -> str:
    """Report progress, rest `seconds` (a cancel from the client ends it sooner), report again."""
    await ctx.report_progress(1, 2)
    await anyio.sleep(seconds)
    await ctx.report_progress(2, 2)
    return f"rested {seconds}s"


if __name__ == "__main__":
    server.run("stdio")
