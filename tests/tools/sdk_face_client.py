"""Test client on the real `mcp` SDK (runs in the side virtual environment) for `mcptap mcp`.
Usage: sdk_face_client.py -- CMD [ARGS...]: starts the server over stdio (its environment is
$MCPTAP_TEST_SERVER_ENV, a JSON object, as a host's config gives it), lists its tools, calls each
with the arguments in $MCPTAP_TEST_CALLS (a JSON list of [tool, arguments]), and prints one JSON
line: the tools (name, readOnlyHint, input properties) and each call's structured result, or its
error text when the call failed."""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    sep, command, *args = sys.argv[1:]
    assert sep == "--"
    env = json.loads(os.environ["MCPTAP_TEST_SERVER_ENV"])
    calls = json.loads(os.environ["MCPTAP_TEST_CALLS"])
    out = {"calls": []}
    async with Client(StdioServerParameters(command=command, args=args, env=env), read_timeout_seconds=60) as client:
        tools = [t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]
        out["tools"] = {t["name"]: {"read_only": t.get("annotations", {}).get("readOnlyHint"),
                                    "inputs": sorted(t["inputSchema"].get("properties", {}))} for t in tools}
        for name, arguments in calls:
            result = (await client.call_tool(name, arguments)).model_dump(by_alias=True)
            if result.get("isError"):
                out["calls"].append({"tool": name, "error": " ".join(c["text"] for c in result["content"])})
            else:
                out["calls"].append({"tool": name, "result": result["structuredContent"]})
    print(json.dumps(out))


asyncio.run(main())
