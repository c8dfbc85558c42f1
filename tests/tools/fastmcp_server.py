"""A fastmcp server (runs in the side virtual environment `fastmcp_python` makes) that hides a tool
from its session when asked, the way fastmcp does it: `Context.disable_components`, which sends
`notifications/tools/list_changed`. Usage: fastmcp_server.py stdio | fastmcp_server.py http PORT."""

import sys

from fastmcp import Context, FastMCP

server = FastMCP("hiding")


@server.tool
def secret() -> str:
    """A tool this session may lose."""
    return "still here"


@server.tool
async def hide(ctx: Context) -> str:
    """Hide `secret` from this session (fastmcp announces it with notifications/tools/list_changed)."""
    await ctx.disable_components(names={"secret"})
    return "hidden"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
