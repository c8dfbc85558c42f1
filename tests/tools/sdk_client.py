"""Test client on the real `mcp` SDK (runs in the side virtual environment). Usage:
sdk_client.py MODE SERVER {sdk|time} -- CMD [ARGS...]; MODE is 'legacy' (initialize handshake)
or 'auto' (the SDK's default: 2026-07-28 where the server speaks it). Prints one JSON line with
the negotiated version and what the calls returned. $MCPTAP_TEST_SERVER_ENV (a JSON object): the
environment the server gets, as a host's config entry gives it (`env`)."""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    mode, kind, sep, command, *args = sys.argv[1:]
    assert sep == "--"
    env = json.loads(os.environ["MCPTAP_TEST_SERVER_ENV"]) if "MCPTAP_TEST_SERVER_ENV" in os.environ else None
    params = StdioServerParameters(command=command, args=args, env=env)
    out = {}
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        out["protocol_version"] = client.protocol_version
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        if kind == "sdk":
            out["echo"] = (await client.call_tool("echo", {"text": "héllo ✓"})).content[0].text
            out["add"] = (await client.call_tool("add", {"a": 2, "b": 40})).content[0].text
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            out["slow"] = (await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)).content[0].text
            out["progress"] = progress
        else:
            result = await client.call_tool("get_current_time", {"timezone": "UTC"})
            out["time"] = json.loads(result.content[0].text)["timezone"]
    print(json.dumps(out))


asyncio.run(main())
