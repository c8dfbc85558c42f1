"""The real `mcp` SDK's OAuth client (mcp.client.auth.OAuthClientProvider) against an OAuth-protected
MCP server (runs in the side virtual environment). Usage: sdk_oauth_client.py MODE URL [PROXY]; MODE
is 'legacy' (initialize handshake) or 'auto'. The browser step is done headlessly: the authorization
URL is fetched without following its redirect, and the code and state are read from its Location.
PROXY: an explicit HTTP proxy every request goes through (the MCP server's, the authorization
server's and the browser step's). Prints one JSON line: the protocol version, the tools, an echo."""

import asyncio
import json
import sys
from urllib.parse import parse_qs, urlsplit

import httpx2

from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from sdk_shared import Memory  # noqa: E402 - the tools' folder is the script's own

REDIRECT = "http://127.0.0.1:1/callback"  # never dialled: the redirect's Location is read instead


async def main() -> None:
    mode, url, *rest = sys.argv[1:]
    proxy = rest[0] if rest else None
    answer: dict = {}

    async def redirect(authorization_url: str) -> None:
        async with httpx2.AsyncClient(proxy=proxy, follow_redirects=False) as browser:
            got = await browser.get(authorization_url)
        query = parse_qs(urlsplit(got.headers["location"]).query)
        answer.update(code=query["code"][0], state=query.get("state", [None])[0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answer["code"], state=answer["state"])

    auth = OAuthClientProvider(server_url=url, storage=Memory(), redirect_handler=redirect, callback_handler=callback,
                               client_metadata=OAuthClientMetadata(client_name="mcptap test", redirect_uris=[REDIRECT],
                                                                   grant_types=["authorization_code", "refresh_token"],
                                                                   response_types=["code"], scope="mcp"))
    out = {}
    async with httpx2.AsyncClient(auth=auth, proxy=proxy, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30) as client:
            out["protocol_version"] = client.protocol_version
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            out["echo"] = (await client.call_tool("echo", {"text": "behind oauth"})).content[0].text
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
