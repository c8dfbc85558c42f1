"""Test client on the real `mcp` SDK (runs in a side virtual environment): lists the tools, calls
`hide`, waits for the server's `notifications/tools/list_changed`, and lists the tools again.
Usage: sdk_list_changed_client.py MODE stdio "CMD ARGS" | sdk_list_changed_client.py MODE http URL; MODE is
'legacy' (initialize handshake) or 'auto' (2026-07-28 where the server speaks it). Prints one JSON line:
the tool names before and after."""

import asyncio
import json
import shlex
import sys

import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

WAIT_S = 30


async def main() -> None:
    mode, transport, where = sys.argv[1:4]
    if transport == "stdio":
        command, *args = shlex.split(where)
        server = StdioServerParameters(command=command, args=args)
    else:
        server = where
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    out = {}
    async with Client(server, mode=mode, read_timeout_seconds=30, message_handler=on_message) as client:
        out["protocol_version"] = client.protocol_version
        out["before"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["hide"] = (await client.call_tool("hide", {})).content[0].text
        await asyncio.wait_for(changed.wait(), WAIT_S)
        out["after"] = sorted(t.name for t in (await client.list_tools()).tools)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
