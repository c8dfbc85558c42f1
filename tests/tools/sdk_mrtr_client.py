"""Test client on the real `mcp` SDK (runs in the side virtual environment) for a tool that needs
input (sdk_mrtr_server.py). Usage: sdk_mrtr_client.py {echo|tamper} -- CMD [ARGS...]. `echo`: the
SDK's own loop answers the elicitation and retries with the requestState it was given; `tamper`:
the rounds driven by hand, the retry's requestState changed by one character. Prints one JSON line:
the negotiated version and what the call returned (or the error code the server refused it with)."""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult


async def on_elicit(context, params):
    return ElicitResult(action="accept", content={"name": "Ada"})


async def main() -> None:
    mode, sep, command, *args = sys.argv[1:]
    assert sep == "--"
    out = {}
    params = StdioServerParameters(command=command, args=args)
    async with Client(params, mode="auto", read_timeout_seconds=30, elicitation_callback=on_elicit) as client:
        out["protocol_version"] = client.protocol_version
        if mode == "echo":
            out["greet"] = (await client.call_tool("greet", {})).content[0].text
        else:
            asked = await client.session.call_tool("greet", {}, allow_input_required=True)
            answers = {key: ElicitResult(action="accept", content={"name": "Ada"}) for key in asked.input_requests}
            state = asked.request_state
            altered = state[:-1] + ("A" if state[-1] != "A" else "B")
            try:
                await client.session.call_tool("greet", {}, input_responses=answers, request_state=altered,
                                               allow_input_required=True)
                out["refused"] = None
            except MCPError as exc:
                out["refused"] = exc.error.code
    print(json.dumps(out))


asyncio.run(main())
