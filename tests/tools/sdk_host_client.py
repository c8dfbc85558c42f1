"""A host on the real `mcp` SDK (runs in the side virtual environment): reads a Claude Desktop config
(`mcpServers`), starts every server in it over stdio at once, as a host does, lists each one's
tools and calls `echo` where a server has it, then closes them all. Usage: sdk_host_client.py CONFIG.
Prints one JSON line: {server name: [tool names]}."""

import asyncio
import contextlib
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        servers = json.load(fh)["mcpServers"]
    out = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, entry in servers.items():
            params = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=entry.get("env"))
            clients[name] = await stack.enter_async_context(Client(params, mode="legacy", read_timeout_seconds=60))
        for name, client in clients.items():
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            out[name] = tools
            if "echo" in tools:
                await client.call_tool("echo", {"text": f"from the host to {name}"})
    print(json.dumps(out))


asyncio.run(main())
