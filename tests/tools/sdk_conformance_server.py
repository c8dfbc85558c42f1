"""The server the official MCP conformance suite's server scenarios expect (its tools, resources and
prompts, by the names the scenarios call), on the real `mcp` SDK over Streamable HTTP (runs in the side
virtual environment). Usage: sdk_conformance_server.py PORT; it serves http://127.0.0.1:PORT/mcp, with an
event store (every SSE event has an id, a client may resume) and a 100 ms `retry` hint."""

import base64
import json
import sys
import warnings
import anyio
from pydantic import BaseModel, Field

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
import sdk_conformance_mrtr  # the tools' folder is the script's own
from sdk_shared import EventStore

warnings.filterwarnings("ignore", message="The sampling capability is deprecated")

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

server = MCPServer("mcptap-conformance-server")
sdk_conformance_mrtr.register(server)


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def image() -> types.ImageContent:
    return types.ImageContent(type="image", data=IMAGE, mime_type="image/png")


def embedded(uri: str, body: str, mime: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(type="resource",
                                  resource=types.TextResourceContents(uri=uri, mime_type=mime, text=body))


# -- tools ------------------------------------------------------------------------------------

@server.tool()
def test_simple_text() -> str:
    """A text answer."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[types.ImageContent]:
    """An image answer."""
    return [image()]


@server.tool()
def test_audio_content() -> list[types.AudioContent]:
    """An audio answer."""
    return [types.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[types.EmbeddedResource]:
    """An embedded resource answer."""
    return [embedded("test://embedded-resource", "This is an embedded resource content.")]


@server.tool()
def test_multiple_content_types() -> list[types.TextContent | types.ImageContent | types.EmbeddedResource]:
    """Text, an image and a resource in one answer."""
    return [text("Multiple content types test:"), image(),
            embedded("test://mixed-content-resource", '{"test": "data", "value": 123}', "application/json")]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Three log messages while it runs."""
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(message)
        await anyio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Three progress notifications while it runs."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, message=f"Completed step {step} of 100")
        await anyio.sleep(0.05)
    meta = ctx.request_context.meta
    return str(meta.get("progress_token") if isinstance(meta, dict) else getattr(meta, "progress_token", 0))


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling)."""
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=text(prompt))], max_tokens=100,
        related_request_id=ctx.request_id)
    return f"LLM response: {getattr(result.content, 'text', 'No response')}"


class UserResponse(BaseModel):
    response: str = Field(description="User's response")


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user (elicitation)."""
    result = await ctx.elicit(message, UserResponse)
    content = result.data.model_dump_json() if result.action == "accept" and result.data else "{}"
    return f"User response: action={result.action}, content={content}"


class Defaults(BaseModel):
    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(default="active", description="User status",
                        json_schema_extra={"enum": ["active", "inactive", "pending"]})
    verified: bool = Field(default=True, description="Verification status")


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicitation whose fields all have defaults."""
    result = await ctx.elicit("Please provide user information", Defaults)
    content = result.data.model_dump_json() if result.action == "accept" and result.data else "{}"
    return f"Elicitation result: action={result.action}, content={content}"


class Enums(BaseModel):
    untitledSingle: str = Field(description="Simple enum without titles",
                                json_schema_extra={"enum": ["active", "inactive", "pending"]})
    titledSingle: str = Field(description="Enum with titled options (oneOf)", json_schema_extra={"oneOf": [
        {"const": "low", "title": "Low Priority"}, {"const": "medium", "title": "Medium Priority"},
        {"const": "high", "title": "High Priority"}]})
    untitledMulti: list[str] = Field(description="Multi-select without titles", json_schema_extra={
        "items": {"type": "string", "enum": ["read", "write", "execute"]}})
    titledMulti: list[str] = Field(description="Multi-select with titled options", json_schema_extra={
        "items": {"anyOf": [{"const": "feature", "title": "New Feature"}, {"const": "bug", "title": "Bug Fix"},
                            {"const": "docs", "title": "Documentation"}]}})
    legacyEnum: str = Field(description="Legacy enum with enumNames", json_schema_extra={
        "enum": ["small", "medium", "large"], "enumNames": ["Small Size", "Medium Size", "Large Size"]})


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicitation with every kind of enum field."""
    result = await ctx.elicit("Please select values using different enum schema types", Enums)
    content = result.data.model_dump_json() if result.action == "accept" and result.data else "{}"
    return f"Elicitation completed: action={result.action}, content={content}"


@server.tool()
def test_error_handling() -> str:
    """Fail (an isError result)."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Close the SSE stream in the middle of the call (the client polls back with Last-Event-ID)."""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@server.tool(name="json_schema_2020_12_tool")
def json_schema_tool(address: dict | None = None) -> str:
    """A tool whose input schema uses JSON Schema 2020-12 keywords."""
    return json.dumps(address or {})


# The listed schema keeps the 2020-12 keywords (`$schema`, `$defs`, `additionalProperties`) a client must
# pass through untouched; the SDK still validates calls against the function's own signature.
server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                           "city": {"type": "string"}}}},
    "properties": {"address": {"$ref": "#/$defs/address"}}, "additionalProperties": False}


# -- resources and prompts --------------------------------------------------------------------

@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (an image)."""
    return base64.b64decode(IMAGE)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template(id: str) -> str:
    """A resource template with a parameter."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource a client may subscribe to."""
    return "Watched resource content"


@server.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments."""
    return [UserMessage(text("This is a simple prompt for testing."))]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt with two required arguments."""
    return [UserMessage(text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt holding an embedded resource."""
    return [UserMessage(embedded(resourceUri, "Embedded resource content for testing.")),
            UserMessage(text("Please process the embedded resource above."))]


@server.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt holding an image."""
    return [UserMessage(image()), UserMessage(text("Please analyze the image above."))]


@server.completion()
async def complete(ref, argument, context) -> types.Completion:
    return types.Completion(values=[], total=0, has_more=False)


async def accept(ctx, params) -> types.EmptyResult:
    return types.EmptyResult()


low = server._lowlevel_server
low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, accept)
low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, accept)
low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, accept)


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), event_store=EventStore(),
               retry_interval=100)
