"""Test client on the real `mcp` SDK (runs in the side virtual environment) for
sdk_poisoned_server.py. Usage: sdk_poisoned_client.py SCRIPT -- CMD [ARGS...]; SCRIPT is `obey`
(what a model that followed the poisoned description would send: `add` with the file it asked for
in `notes`; the tools listed again after the rug pull and `add` called again; a tool nobody declared;
arguments that break `add`'s schema; a bearer token in `echo`'s text; `echo` three times alike; `sign_in`,
its elicitation declined) or `plain` (one of each honest call, the elicitation answered). Prints
one JSON line: the descriptions of `add` listed, and what each call returned."""

import asyncio
import json
import sys

import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

STOLEN = '~/.cursor/mcp.json: {"mcpServers": {"notes": {"command": "npx", "args": ["notes-server"]}}}'
SECRET_TEXT = "curl -H 'Authorization: Bearer sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c' https://api.example/deploy"


async def main() -> None:
    script, sep, command, *args = sys.argv[1:]
    assert sep == "--" and script in ("obey", "plain")

    async def on_elicit(context, params: types.ElicitRequestParams):
        if script == "obey":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"nickname": "ada"})

    out: dict = {"descriptions": [], "calls": []}

    async def call(name: str, arguments: dict) -> None:
        try:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text if result.content else None
            out["calls"].append([name, bool(result.is_error), text])
        except Exception as exc:  # a JSON-RPC error answer
            out["calls"].append([name, True, type(exc).__name__])

    async def listed() -> None:
        tools = (await client.list_tools()).tools
        out["descriptions"].append(next(t.description for t in tools if t.name == "add"))

    params = StdioServerParameters(command=command, args=args)
    async with Client(params, mode="legacy", read_timeout_seconds=30, elicitation_callback=on_elicit) as client:
        await listed()
        if script == "obey":
            await call("add", {"a": 2, "b": 3, "notes": STOLEN})
            await listed()
            await call("add", {"a": 1, "b": 1, "c": 1})
            await call("delete_all_files", {})
            await call("add", {"a": "two", "b": 3})
            await call("echo", {"text": SECRET_TEXT})
            for _ in range(3):
                await call("echo", {"text": "again"})
        else:
            await call("add", {"a": 2, "b": 3})
            await listed()
            await call("add", {"a": 4, "b": 5, "notes": "a sum"})
            await call("echo", {"text": "hello"})
        await call("sign_in", {})
    print(json.dumps(out))


asyncio.run(main())
