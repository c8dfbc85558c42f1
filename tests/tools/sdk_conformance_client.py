"""The client the official MCP conformance suite's client scenarios run, on the real `mcp` SDK (runs in the
side virtual environment). The suite runs it as `sdk_conformance_client.py MODE URL` with the scenario's name in
MCP_CONFORMANCE_SCENARIO and, for some authorization scenarios, credentials in MCP_CONFORMANCE_CONTEXT.
It connects in MODE ('legacy': the initialize handshake; 'auto': 2026-07-28 where the server speaks it,
else the handshake), lists the
tools and calls them: the one a scenario names, or each listed tool with arguments made from its schema.
Authorization scenarios go through the SDK's OAuth client, the browser step done headlessly; the
client-credentials ones through its client_credentials providers (a client secret, a private_key_jwt)."""

import asyncio
import json
import os
import sys
from urllib.parse import parse_qs, urlsplit

import httpx2

import mcp.types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider,
                                                           SignedJWTParameters)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from mcp.shared.exceptions import MCPError
from sdk_shared import Memory  # noqa: E402 - the tools' folder is the script's own

REDIRECT = "http://localhost:3000/callback"  # never dialled: the redirect's Location is read instead
# The tool a scenario calls (other scenarios call every listed tool).
CALLS = {"tools_call": ("add_numbers", {"a": 5, "b": 3}), "sse-retry": ("test_reconnection", {}),
         "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {})}


async def on_elicit(context, params):
    """Accept, with the defaults the requested schema gives."""
    schema = getattr(params, "requested_schema", None) or {}
    content = {name: prop["default"] for name, prop in schema.get("properties", {}).items() if "default" in prop}
    return types.ElicitResult(action="accept", content=content)


async def on_sample(context, params):
    return types.CreateMessageResult(role="assistant", model="test-model",
                                     content=types.TextContent(type="text", text="a sampled answer"))


async def on_roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/conformance", name="conformance")])


def arguments(schema: dict) -> dict:
    """Values for a tool's required arguments, by their declared type."""
    made = {"string": "test", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    props = schema.get("properties", {})
    return {name: made.get(props.get(name, {}).get("type"), "test") for name in schema.get("required", [])}


def oauth(url: str) -> OAuthClientProvider:
    answer: dict = {}

    async def redirect(authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            got = await browser.get(authorization_url)
        query = parse_qs(urlsplit(got.headers["location"]).query)
        answer.update(code=query["code"][0], state=query.get("state", [None])[0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answer["code"], state=answer["state"])

    storage = Memory()
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if scenario == "auth/client-credentials-basic":  # the client_credentials grant (SEP-1046), a client secret
        return ClientCredentialsOAuthProvider(server_url=url, storage=storage, client_id=context["client_id"],
                                              client_secret=context["client_secret"])
    if scenario == "auth/client-credentials-jwt":  # ... authenticated by a private_key_jwt assertion
        signer = SignedJWTParameters(issuer=context["client_id"], subject=context["client_id"],
                                     signing_key=context["private_key_pem"],
                                     signing_algorithm=context.get("signing_algorithm", "ES256"))
        return PrivateKeyJWTOAuthProvider(server_url=url, storage=storage, client_id=context["client_id"],
                                          assertion_provider=signer.create_assertion_provider())
    if context.get("client_id"):  # a pre-registered client
        storage.client = OAuthClientInformationFull(
            client_id=context["client_id"], client_secret=context.get("client_secret"), redirect_uris=[REDIRECT],
            token_endpoint_auth_method="client_secret_basic" if context.get("client_secret") else "none")
    return OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=redirect, callback_handler=callback,
        client_metadata=OAuthClientMetadata(client_name="mcptap conformance client", redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"]),
        client_metadata_url="https://conformance-test.local/client-metadata.json")


async def main() -> None:
    mode, url = sys.argv[1:]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = oauth(url) if scenario.startswith("auth/") else None
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30,
                          elicitation_callback=on_elicit, sampling_callback=on_sample,
                          list_roots_callback=on_roots) as client:
            tools = (await client.list_tools()).tools
            if scenario == "initialize":
                return
            calls = [CALLS[scenario]] if scenario in CALLS else [(t.name, arguments(t.input_schema)) for t in tools]
            for name, args in calls:
                try:
                    await client.call_tool(name, args)
                except MCPError as error:  # a refusal is the server's to give; the scenario judges it
                    print(f"{name}: {error}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
