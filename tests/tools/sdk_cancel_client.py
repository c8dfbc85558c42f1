"""Test client on the real `mcp` SDK (runs in the side virtual environment): a session with a
cancelled call. Usage: sdk_cancel_client.py MODE stdio "CMD ARGS", or MODE streamable URL; MODE
is 'legacy' (initialize handshake) or 'auto' (2026-07-28 where the server speaks it).

It calls the tool nap (tests/tools/sdk_server.py), cancels that call when its first progress
arrives (the SDK's own cancellation, a cancel scope around call_tool: over stdio it sends
notifications/cancelled; over 2026-07-28 HTTP it closes the request's stream), then makes the
same call again and waits for its answer. Prints one JSON line: how each call ended ("cancelled"
or the text it got) and the progress each saw."""

import json
import shlex
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

DEADLINE_S = 60
NAP = {"seconds": 1.0}


async def call(client: Client, cancel_at_progress: bool) -> tuple[str, list[float]]:
    seen: list[float] = []
    with anyio.CancelScope() as scope:

        async def on_progress(progress, total, message):
            seen.append(progress)
            if cancel_at_progress:
                scope.cancel()

        result = await client.call_tool("nap", NAP, progress_callback=on_progress)
        return result.content[0].text, seen
    return "cancelled", seen


async def main() -> None:
    mode, transport, target = sys.argv[1:]
    if transport == "stdio":
        command, *args = shlex.split(target)
        server = StdioServerParameters(command=command, args=args)
    else:
        server = target
    out = {}
    with anyio.fail_after(DEADLINE_S):
        async with Client(server, mode=mode, read_timeout_seconds=30) as client:
            out["protocol_version"] = client.protocol_version
            out["first"], out["first_progress"] = await call(client, cancel_at_progress=True)
            out["second"], out["second_progress"] = await call(client, cancel_at_progress=False)
    print(json.dumps(out))


anyio.run(main)
