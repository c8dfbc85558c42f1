"""Test server on the real `mcp` SDK over HTTP (runs in the side virtual environment). Usage:
sdk_http_server.py {streamable|json|sse|resumable} PORT (resumable: streamable with an event store, so every SSE
event has an id), or https PORT CERT KEY, or stdio (the same server over stdio).
Tools: echo; login (a password argument);
slow (progress `steps` times); ticks (progress every `interval` seconds, each progress message the server's clock when
it was sent); ask (elicits a name from the client: a server-to-client request); sample (asks the client's model for a
haiku: sampling, a server-to-client request)."""

import sys
import time
import warnings

import anyio
from pydantic import BaseModel

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from sdk_shared import EventStore  # noqa: E402 - the tools' folder is the script's own

warnings.filterwarnings("ignore", message="The sampling capability is deprecated")

server = MCPServer("mcptap-test-http-server")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def login(user: str, password: str) -> str:
    """Pretend to log in (a tool argument that is a credential)."""
    return f"welcome {user}"


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return f"done after {steps} steps"


@server.tool()
async def ticks(count: int, interval: float, ctx: Context) -> str:
    """Report progress `count` times, `interval` seconds apart; each message is the send time."""
    for i in range(count):
        await ctx.report_progress(i + 1, count, message=repr(time.time()))
        await anyio.sleep(interval)
    return f"{count} ticks"


class Name(BaseModel):
    name: str


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the client for a name (elicitation)."""
    result = await ctx.elicit("Who is there?", Name)
    return f"hello {result.data.name}" if result.action == "accept" and result.data else result.action


@server.tool()
async def sample(topic: str, ctx: Context) -> str:
    """Ask the client's model for a haiku about `topic` (sampling)."""
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"a haiku about {topic}"))],
        max_tokens=50, related_request_id=ctx.request_id)
    return f"the model said: {result.content.text}"


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        server.run("stdio")
        sys.exit(0)
    port = int(sys.argv[2])
    if mode == "https":  # sdk_http_server.py https PORT CERT KEY: Streamable HTTP over TLS
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, ssl_certfile=sys.argv[3],
                    ssl_keyfile=sys.argv[4], log_level="warning")
    elif mode == "sse":
        server.run("sse", host="127.0.0.1", port=port)
    elif mode == "resumable":
        server.run("streamable-http", host="127.0.0.1", port=port, event_store=EventStore())
    else:
        server.run("streamable-http", host="127.0.0.1", port=port, json_response=mode == "json")
