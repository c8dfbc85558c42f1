"""The conformance fixture server's 2026-07-28 multi-round-trip diagnostics (the suite's
`input-required-result-*` scenarios, SEP-2322): tools and a prompt that answer `input_required`
with the input requests the scenarios name, and complete once the retry carries the answers and
the echoed, HMAC-sealed `requestState`. `register(server)` adds them to an MCPServer."""

import hashlib
import hmac
import json
import secrets

import mcp.types as types
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError

KEY = secrets.token_bytes(32)


def seal(value: dict) -> str:
    body = json.dumps(value, sort_keys=True)
    return body + "." + hmac.new(KEY, body.encode(), hashlib.sha256).hexdigest()


def opened(state: str | None) -> dict | None:
    """The sealed state's value; an MCPError (invalid params) when it was altered."""
    if state is None:
        return None
    body, _, mac = state.rpartition(".")
    if not hmac.compare_digest(mac, hmac.new(KEY, body.encode(), hashlib.sha256).hexdigest()):
        raise MCPError(code=types.INVALID_PARAMS, message="requestState failed its integrity check")
    return json.loads(body)


def elicit(message: str, field: str, kind: str = "string") -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=message, requested_schema={"type": "object", "properties": {field: {"type": kind}}, "required": [field]}))


def sample(text: str, tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
        max_tokens=tokens))


def roots() -> types.ListRootsRequest:
    return types.ListRootsRequest()


def answered(ctx: Context, *keys: str) -> dict | None:
    """The retry's answers to these keys (extra keys ignored), or None when one is missing."""
    responses = ctx.input_responses or {}
    return {k: responses[k] for k in keys} if all(k in responses for k in keys) else None


def content(response) -> dict:
    """An elicitation answer's content ({} when it has none)."""
    value = getattr(response, "content", None)
    return value if isinstance(value, dict) else {}


def asked(requests: dict, state: dict | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests, request_state=None if state is None else seal(state))


def register(server) -> None:
    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the user's name (elicitation), then greet them."""
        opened(ctx.request_state)
        got = answered(ctx, "user_name")
        if got is None:
            return asked({"user_name": elicit("What is your name?", "name")})
        return f"Hello, {content(got['user_name']).get('name', 'there')}!"

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the client's model a question (sampling), then say what it answered."""
        got = answered(ctx, "capital_question")
        if got is None:
            return asked({"capital_question": sample("What is the capital of France?", 100)})
        said = getattr(got["capital_question"], "content", None)
        return f"The model said: {getattr(said, 'text', '')}"

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the client's roots, then count them."""
        got = answered(ctx, "client_roots")
        if got is None:
            return asked({"client_roots": roots()})
        return f"The client has {len(getattr(got['client_roots'], 'roots', []) or [])} roots"

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask for a confirmation with a sealed requestState, then complete when both come back."""
        state = opened(ctx.request_state)
        got = answered(ctx, "confirm")
        if got is None or state is None:
            return asked({"confirm": elicit("Please confirm", "ok", "boolean")}, {"round": 1})
        return f"Confirmed: {content(got['confirm']).get('ok')}"

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """As request_state; an altered requestState is refused with an error."""
        state = opened(ctx.request_state)
        got = answered(ctx, "confirm")
        if got is None or state is None:
            return asked({"confirm": elicit("Please confirm", "ok", "boolean")}, {"round": 1})
        return "Confirmed"

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask for a name, a greeting from the model and the roots at once."""
        state = opened(ctx.request_state)
        got = answered(ctx, "user_name", "greeting", "client_roots")
        if got is None or state is None:
            return asked({"user_name": elicit("What is your name?", "name"),
                          "greeting": sample("Generate a greeting", 50), "client_roots": roots()}, {"round": 1})
        return f"Hello, {content(got['user_name']).get('name', 'there')}!"

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask a name, then a favourite colour, then answer: two rounds of input."""
        state = opened(ctx.request_state) or {}
        if state.get("round") == 2 and answered(ctx, "step2") is not None:
            color = content(answered(ctx, "step2")["step2"]).get("color")
            return f"Hello, {state.get('name')}! Your favorite color is {color}."
        if state.get("round") == 1 and answered(ctx, "step1") is not None:
            name = content(answered(ctx, "step1")["step1"]).get("name")
            return asked({"step2": elicit("Step 2: What is your favorite color?", "color")}, {"round": 2, "name": name})
        return asked({"step1": elicit("Step 1: What is your name?", "name")}, {"round": 1})

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | types.InputRequiredResult:
        """A prompt that asks what context to use first."""
        got = answered(ctx, "user_context")
        if got is None:
            return asked({"user_context": elicit("What context should the prompt use?", "context")})
        return [UserMessage(f"Use this context: {content(got['user_context']).get('context', '')}")]
