"""Test client on the real `mcp` SDK (runs in the side virtual environment) for the reference
server @modelcontextprotocol/server-everything. Usage: sdk_client_everything.py MODE -- CMD
[ARGS...] (stdio), or MODE --url URL (Streamable HTTP), or MODE --sse URL (legacy HTTP+SSE); MODE is 'legacy' (initialize handshake) or 'auto' (the SDK's default: a server/discover
probe, then the handshake when the server does not speak 2026-07-28).

It drives, without a human, everything the SDK client can: tools (plain, structured, annotated,
image, resource links and references, an error), progress, logging (logging/setLevel and the
server's simulated log), sampling, form and URL elicitation (the request path and the -32042
error path), roots, resources (static, templated, per session, subscriptions), prompts and
completions. Left out: the task tools (simulate-research-query, trigger-*-async: the SDK client
has no task support) and get-env (it would put the environment into recordings). Server requests
are answered by SDK callbacks. It waits for server-driven events (log messages, notifications,
the roots request) on events with timeouts, never on sleeps, and gives up after DEADLINE_S.
Prints one JSON line summarising what it did."""

import base64
import json
import re
import sys
import warnings
from collections import Counter

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

DEADLINE_S = 45  # the whole session (under the tests' 60 s); alone it takes about 2 s
EVENT_TIMEOUT_S = 10  # for one server-driven event
READ_TIMEOUT_S = 15  # for one request
ROOTS = [types.Root(uri="file:///tmp/mcptap-everything", name="scratch")]
SIMULATED_LOG = re.compile(r"level[- ]message")

warnings.simplefilter("ignore")  # the SDK flags 2025-era features (logging, roots, subscribe) as deprecated


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


class Session:
    """The callbacks' record of what the server did, and events to wait on."""

    def __init__(self) -> None:
        self.logs: list[dict] = []
        self.notifications: Counter = Counter()
        self.sampling: list[str] = []
        self.elicitations: list[str] = []
        self.roots_requests = 0
        self.roots_logged = anyio.Event()
        self.simulated_log = anyio.Event()
        self.resource_updated = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append({"level": params.level, "logger": params.logger, "data": str(params.data)[:80]})
        if str(params.data).startswith("Roots updated"):
            self.roots_logged.set()
        if SIMULATED_LOG.search(str(params.data)):
            self.simulated_log.set()

    async def on_message(self, message) -> None:
        if isinstance(message, Exception):
            self.notifications[f"exception:{type(message).__name__}"] += 1
            return
        self.notifications[message.method] += 1
        if isinstance(message, types.ResourceUpdatedNotification):
            self.resource_updated.set()

    async def on_sampling(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        self.sampling.append(getattr(prompt, "text", ""))
        return types.CreateMessageResult(role="assistant", model="mcptap-canned",
                                         content=types.TextContent(type="text", text="a canned answer"),
                                         stop_reason="endTurn")

    async def on_elicitation(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicitations.append(params.mode)
        if params.mode == "url":
            return types.ElicitResult(action="accept")
        answers = {"name": "Ada Lovelace", "check": True, "email": "ada@example.com", "integer": 7,
                   "untitledSingleSelectEnum": "Joey", "untitledMultipleSelectEnum": ["Piano"]}
        wanted = params.requested_schema.get("properties", {})
        return types.ElicitResult(action="accept", content={k: v for k, v in answers.items() if k in wanted})

    async def on_roots(self, context) -> types.ListRootsResult:
        self.roots_requests += 1
        return types.ListRootsResult(roots=ROOTS)


async def wait(event: anyio.Event, what: str) -> None:
    try:
        with anyio.fail_after(EVENT_TIMEOUT_S):
            await event.wait()
    except TimeoutError:
        raise TimeoutError(f"no {what} within {EVENT_TIMEOUT_S}s") from None


async def exercise(client: Client, s: Session, out: dict) -> None:
    out["protocol_version"] = client.protocol_version
    info = client.server_info
    out["server"] = f"{info.name} {info.version}" if info else None
    caps = client.server_capabilities
    out["capabilities"] = sorted(k for k, v in caps.model_dump(exclude_none=True).items() if v is not None)
    await client.send_ping()
    await client.set_logging_level("debug")

    out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
    out["echo"] = text_of(await client.call_tool("echo", {"message": "héllo ✓"}))
    out["sum"] = text_of(await client.call_tool("get-sum", {"a": 2, "b": 40}))
    structured = await client.call_tool("get-structured-content", {"location": "Chicago"})
    out["structured"] = structured.structured_content
    annotated = await client.call_tool("get-annotated-message", {"messageType": "success", "includeImage": True})
    out["annotated"] = [block.type for block in annotated.content]
    out["image"] = [block.type for block in (await client.call_tool("get-tiny-image", {})).content]
    links = await client.call_tool("get-resource-links", {"count": 2})
    out["links"] = [block.uri for block in links.content if block.type == "resource_link"]
    reference = await client.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 3})
    out["reference"] = [block.resource.uri for block in reference.content if block.type == "resource"]
    unknown = await client.call_tool("no-such-tool", {})
    out["unknown_tool"] = {"is_error": unknown.is_error, "text": text_of(unknown)[:80]}

    progress = []

    async def on_progress(value, total, message):
        progress.append([value, total])

    result = await client.call_tool("trigger-long-running-operation", {"duration": 0.2, "steps": 4},
                                    progress_callback=on_progress)
    out["long_running"] = text_of(result)
    out["progress"] = progress

    # The server asks for roots 350 ms after `initialized`; wait for that exchange (it ends with
    # an info log) so the session's traffic does not depend on how fast the rest goes.
    await wait(s.roots_logged, "the server's roots/list and its log")
    out["roots_list"] = text_of(await client.call_tool("get-roots-list", {})).splitlines()[0]

    out["logging_on"] = text_of(await client.call_tool("toggle-simulated-logging", {}))[:40]
    await wait(s.simulated_log, "a simulated log message")
    out["logging_off"] = text_of(await client.call_tool("toggle-simulated-logging", {}))[:40]

    sampled = await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 16})
    out["sampling"] = "a canned answer" in text_of(sampled)
    elicited = await client.call_tool("trigger-elicitation-request", {})
    out["elicitation"] = "Ada Lovelace" in text_of(elicited)
    url_args = {"url": "https://example.com/mcptap-consent", "elicitationId": "mcptap-1"}
    out["url_elicitation"] = text_of(await client.call_tool("trigger-url-elicitation", url_args)).splitlines()[0]
    try:
        await client.call_tool("trigger-url-elicitation", {**url_args, "errorPath": True})
        out["url_elicitation_required"] = None
    except MCPError as error:
        out["url_elicitation_required"] = error.code
    retried = await client.call_tool("trigger-url-elicitation", {**url_args, "errorPath": True})
    out["url_elicitation_retry"] = text_of(retried).splitlines()[0]

    out["resources"] = sorted(r.uri for r in (await client.list_resources()).resources)
    out["templates"] = sorted(t.uri_template for t in (await client.list_resource_templates()).resource_templates)
    static = await client.read_resource(out["resources"][0])
    out["static_read"] = [len(c.text) for c in static.contents]
    dynamic_text = await client.read_resource("demo://resource/dynamic/text/1")
    out["dynamic_text"] = dynamic_text.contents[0].text.split(":")[0]
    dynamic_blob = await client.read_resource("demo://resource/dynamic/blob/2")
    out["dynamic_blob"] = base64.b64decode(dynamic_blob.contents[0].blob).decode().split(":")[0]
    try:
        await client.read_resource("demo://resource/dynamic/text/0")
        out["bad_resource"] = None
    except MCPError as error:
        out["bad_resource"] = error.code

    payload = "data:text/plain;base64," + base64.b64encode("mcptap ✓\n".encode() * 8).decode()
    gz = await client.call_tool("gzip-file-as-resource", {"name": "mcptap.txt.gz", "data": payload})
    gz_uri = next(block.uri for block in gz.content if block.type == "resource_link")
    gz_read = await client.read_resource(gz_uri)
    out["gzip"] = [gz_uri, gz_read.contents[0].mime_type]

    await client.subscribe_resource("demo://resource/dynamic/text/1")
    await client.call_tool("toggle-subscriber-updates", {})
    await wait(s.resource_updated, "notifications/resources/updated")
    await client.call_tool("toggle-subscriber-updates", {})
    await client.unsubscribe_resource("demo://resource/dynamic/text/1")

    out["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
    prompts = {
        "simple-prompt": None,
        "args-prompt": {"city": "Paris", "state": "Île-de-France"},
        "completable-prompt": {"department": "Engineering", "name": "Alice"},
        "resource-prompt": {"resourceType": "Blob", "resourceId": "4"},
    }
    out["prompt_messages"] = {name: len((await client.get_prompt(name, args)).messages) for name, args in prompts.items()}
    completions = [
        (types.PromptReference(name="completable-prompt"), {"name": "department", "value": "E"}, None),
        (types.PromptReference(name="completable-prompt"), {"name": "name", "value": "A"}, {"department": "Engineering"}),
        (types.ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"),
         {"name": "resourceId", "value": "7"}, None),
    ]
    out["completions"] = [(await client.complete(ref, arg, ctx)).completion.values for ref, arg, ctx in completions]


def server_of(argv: list[str]):
    """`-- CMD [ARGS...]` (stdio), `--url URL` (Streamable HTTP) or `--sse URL` (legacy HTTP+SSE)."""
    how, *rest = argv
    if how == "--url":
        return rest[0]
    if how == "--sse":
        from mcp.client.sse import sse_client

        return sse_client(rest[0])
    assert how == "--", "usage: sdk_client_everything.py MODE {-- CMD [ARGS...] | --url URL | --sse URL}"
    return StdioServerParameters(command=rest[0], args=rest[1:])


async def main() -> None:
    mode, *argv = sys.argv[1:]
    s = Session()
    out: dict = {"mode": mode}
    with anyio.fail_after(DEADLINE_S):
        async with Client(server_of(argv), mode=mode,
                          read_timeout_seconds=READ_TIMEOUT_S, sampling_callback=s.on_sampling,
                          elicitation_callback=s.on_elicitation, list_roots_callback=s.on_roots,
                          logging_callback=s.on_log, message_handler=s.on_message) as client:
            await exercise(client, s, out)
    out["server_requests"] = {"sampling": s.sampling, "elicitation": s.elicitations, "roots": s.roots_requests}
    out["notifications"] = dict(sorted(s.notifications.items()))
    out["logs"] = s.logs
    print(json.dumps(out, ensure_ascii=False))


anyio.run(main)
