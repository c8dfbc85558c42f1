"""Test client on the real `mcp` SDK (runs in the side virtual environment) that follows the same PLAN
as tests/tools/ts_client.mjs, so one plan drives a server from both SDKs. Usage:
sdk_client_plan.py MODE PLAN (--stdio CMD [ARGS...] | --url URL); MODE is 'legacy' (initialize
handshake) or 'auto' (the SDK's default: 2026-07-28 where the server speaks it). The generic part does
what the server declares (ping and logging/setLevel in the handshake era, the tools, resources,
templates and prompts lists); PLAN (JSON) adds calls, a call with progress, a cancelled call (the
cancel scope closes `ms` after the call is sent: notifications/cancelled, or in 2026-07-28 over
HTTP the request closed; a ping follows in the handshake era), reads, prompts, completions, a
subscription, `roots` (the answer to roots/list) and `env` for a stdio server.
Server requests are answered with canned values. Prints one JSON line."""

import json
import os
import sys
import warnings
from collections import Counter

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

DEADLINE_S = 50
READ_TIMEOUT_S = 15
ROOTS = ["file:///tmp/mcptap-sdk-client"]  # unless the plan gives its own ("roots")

warnings.simplefilter("ignore")  # the SDK flags 2025-era features (logging, roots, subscribe) as deprecated


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")[:200]


def elicited(schema: dict) -> dict:
    content = {}
    for name, prop in (schema or {}).get("properties", {}).items():
        if "enum" in prop:
            content[name] = prop["enum"][0]
        elif "oneOf" in prop:
            content[name] = prop["oneOf"][0]["const"]
        elif prop.get("type") == "boolean":
            content[name] = True
        elif prop.get("type") in ("number", "integer"):
            content[name] = prop.get("minimum", 7)
        elif prop.get("format") == "email":
            content[name] = "ada@example.com"
        else:
            content[name] = "Ada Lovelace"
    return content


class Seen:
    def __init__(self, roots: list[str]) -> None:
        self.roots = [types.Root(uri=uri, name="scratch") for uri in roots]
        self.server_requests: Counter = Counter()
        self.notifications: Counter = Counter()

    async def on_sampling(self, context, params):
        self.server_requests["sampling/createMessage"] += 1
        return types.CreateMessageResult(role="assistant", model="mcptap-canned",
                                         content=types.TextContent(type="text", text="a canned answer"),
                                         stop_reason="endTurn")

    async def on_elicitation(self, context, params):
        self.server_requests["elicitation/create"] += 1
        if params.mode == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=elicited(params.requested_schema))

    async def on_roots(self, context):
        self.server_requests["roots/list"] += 1
        return types.ListRootsResult(roots=self.roots)

    async def on_log(self, params) -> None:
        self.notifications["notifications/message"] += 1

    async def on_message(self, message) -> None:
        if not isinstance(message, Exception):
            self.notifications[message.method] += 1


def server_of(how: str, target: list[str], plan: dict):
    if how == "--url":
        return target[0]
    assert how == "--stdio", "usage: sdk_client_plan.py MODE PLAN (--stdio CMD [ARGS...] | --url URL)"
    return StdioServerParameters(command=target[0], args=target[1:], env={**os.environ, **plan.get("env", {})})


async def exercise(client: Client, plan: dict, out: dict) -> None:
    out["protocol_version"] = client.protocol_version
    modern = client.protocol_version.startswith("2026-")
    out["server"] = client.server_info.name if client.server_info else None
    caps = client.server_capabilities
    out["capabilities"] = sorted(k for k, v in caps.model_dump(exclude_none=True).items() if v is not None)
    if not modern:
        await client.send_ping()
        if caps.logging is not None:
            await client.set_logging_level(plan.get("log_level", "debug"))
    if caps.tools is not None:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
    if caps.resources is not None:
        out["resources"] = sorted(r.uri for r in (await client.list_resources()).resources)
        out["templates"] = sorted(t.uri_template for t in (await client.list_resource_templates()).resource_templates)
    if caps.prompts is not None:
        out["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
    out["calls"] = []
    for name, args in plan.get("calls", []):
        result = await client.call_tool(name, args)
        out["calls"].append({"name": name, "is_error": bool(result.is_error), "text": text_of(result)})
    if "progress" in plan:
        name, args = plan["progress"]
        seen = []

        async def on_progress(value, total, message):
            seen.append([value, total])

        out["progress_result"] = text_of(await client.call_tool(name, args, progress_callback=on_progress))
        out["progress"] = seen
    if "cancel" in plan:
        name, args, ms = plan["cancel"]
        out["cancel"] = "cancelled"
        with anyio.move_on_after(ms / 1000):
            await client.call_tool(name, args)
            out["cancel"] = "answered"
        if not modern:  # the cancel notification goes out without waiting: let it out before a close
            await client.send_ping()
    out["reads"] = []
    for uri in plan.get("reads", []):
        contents = (await client.read_resource(uri)).contents
        out["reads"].append([c.text[:80] if hasattr(c, "text") else f"blob:{len(c.blob)}" for c in contents])
    out["prompt_messages"] = [len((await client.get_prompt(name, args)).messages) for name, args in plan.get("prompts", [])]
    out["completions"] = []
    for ref, arg, value in plan.get("complete", []):
        reference = (types.PromptReference(name=ref["name"]) if ref["type"] == "ref/prompt"
                     else types.ResourceTemplateReference(uri=ref["uri"]))
        completion = (await client.complete(reference, {"name": arg, "value": value})).completion
        out["completions"].append(completion.values)
    if "subscribe" in plan:
        await client.subscribe_resource(plan["subscribe"])
        await client.unsubscribe_resource(plan["subscribe"])


async def main() -> None:
    mode, plan_text, how, *target = sys.argv[1:]
    plan = json.loads(plan_text)
    seen = Seen(plan.get("roots", ROOTS))
    out: dict = {"sdk": "python", "mode": mode}
    with anyio.fail_after(DEADLINE_S):
        async with Client(server_of(how, target, plan), mode=mode, read_timeout_seconds=READ_TIMEOUT_S,
                          sampling_callback=seen.on_sampling, elicitation_callback=seen.on_elicitation,
                          list_roots_callback=seen.on_roots, logging_callback=seen.on_log,
                          message_handler=seen.on_message) as client:
            await exercise(client, plan, out)
    out["server_requests"] = dict(sorted(seen.server_requests.items()))
    out["notifications"] = dict(sorted(seen.notifications.items()))
    print(json.dumps(out, ensure_ascii=False))


anyio.run(main)
