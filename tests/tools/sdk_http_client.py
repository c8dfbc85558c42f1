"""Test client on the real `mcp` SDK over HTTP (runs in the side virtual environment). Usage:
sdk_http_client.py MODE {streamable|sse} URL [ticks [endless]] [resume] [ask] [sample] [login] [prompts] [cancel], or MODE stdio "CMD ARGS" [...]; MODE is
'legacy' (initialize handshake) or 'auto' (the SDK's default: 2026-07-28 where the server speaks it). Prints one JSON
line: what the calls returned (`ask`: also a tool that elicits, a server-to-client request; `sample`: a tool that asks
for sampling, answered here; `login`: a tool given a password, twice; `cancel`: a slow call given up after a second
(the SDK cancels it), then one more call; `prompts`: prompts/list, or the error it got), and for `ticks`, each progress as (send
time from the server, receive time here); `resume`: only the call of tests/tools/sse_retry_server.py."""

import asyncio
import json
import shlex
import sys
import time

import mcp.types as types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "mcptap"})


async def on_sample(context, params):
    return types.CreateMessageResult(role="assistant", model="test-model",
                                     content=types.TextContent(type="text", text="an old silent pond"))


async def main() -> None:
    mode, transport, url, *what = sys.argv[1:]
    if transport == "stdio":
        command, *args = shlex.split(url)
        server = StdioServerParameters(command=command, args=args)
    else:
        server = sse_client(url) if transport == "sse" else url
    out = {}
    async with Client(server, mode=mode, read_timeout_seconds=30, elicitation_callback=on_elicit,
                      sampling_callback=on_sample) as client:
        out["protocol_version"] = client.protocol_version
        if "ticks" in what:
            seen = []

            async def on_tick(progress, total, message):
                seen.append((float(message), time.time()))

            count = 1000 if "endless" in what else 10  # endless: until the test kills this client
            await client.call_tool("ticks", {"count": count, "interval": 0.3}, progress_callback=on_tick)
            out["ticks"] = seen
        elif "resume" in what:  # a call answered on the stream resumed after its own ended (sse_retry_server.py)
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            out["resume"] = (await client.call_tool("resume", {})).content[0].text
        else:
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            out["echo"] = (await client.call_tool("echo", {"text": "héllo ✓"})).content[0].text
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            out["slow"] = (await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)).content[0].text
            out["progress"] = progress
            if "ask" in what:
                out["ask"] = (await client.call_tool("ask", {})).content[0].text
            if "sample" in what:
                out["sample"] = (await client.call_tool("sample", {"topic": "ponds"})).content[0].text
            if "login" in what:
                for _ in range(2):  # the same secret twice: the same hash twice
                    out["login"] = (await client.call_tool("login", {"user": "ann", "password": "hunter2-pw"})).content[0].text
            if "cancel" in what:  # a call given up after a second: the SDK's own cancellation
                try:
                    await asyncio.wait_for(client.call_tool("ticks", {"count": 100, "interval": 0.1}), 1.0)
                    out["cancel"] = "answered"
                except (TimeoutError, asyncio.TimeoutError):
                    out["cancel"] = "cancelled"
                out["after_cancel"] = (await client.call_tool("echo", {"text": "still here"})).content[0].text
            if "prompts" in what:
                try:
                    out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
                except MCPError as exc:
                    out["prompts"] = f"error {exc.error.code}: {exc.error.message}"
    print(json.dumps(out))


asyncio.run(main())
