"""An OAuth-protected MCP server on the real `mcp` SDK (runs in the side virtual environment):
an authorization server (the SDK's `create_auth_routes`: RFC 8414 metadata, dynamic client
registration, /authorize answering with a redirect that carries the code at once, /token) on
AS_PORT, and the MCP server (`MCPServer` with `AuthSettings`: 401 challenges naming its RFC 9728
protected-resource metadata, tokens checked against the authorization server's store) on RS_PORT.
Usage: sdk_oauth_server.py AS_PORT RS_PORT [FAULT]. FAULT, planted in the MCP server's answers:
`no-challenge` (a 401 without WWW-Authenticate), `bare-challenge` (a Bearer challenge without
resource_metadata: allowed from 2025-11-25 when the well-known metadata is there), `old-revision`
(that bare challenge from a server that negotiates 2025-06-18, where resource_metadata is
required: the initialize request's 2025-11-25 reaches it as 2025-06-18), `insecure-issuer` (the
authorization server's issuer, and so what the protected-resource metadata names, is
http://auth.mcptap.test:AS_PORT/: plain http on a host that is not loopback, which only a client
that dials mcptap.test on 127.0.0.1 reaches), `custom-metadata` (the challenge names protected-resource
metadata at /oauth/resource-metadata, not under /.well-known/, which answers 404 instead: a document
written as PHP writes JSON, slashes escaped, whose `resource_documentation` holds the resource's URL
before `resource` does); and, with no
authorization at all, `open-origin` (the DNS-rebinding protection off: a foreign Origin is served)
or `guarded-origin` (the protection on). Tool: echo."""

import asyncio
import json
import secrets
import sys
import time

import uvicorn
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams, ProviderTokenVerifier,
                                      RefreshToken, construct_redirect_uri)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthToken


class MemoryAS:
    """An authorization server's store, in memory: every authorization is granted at once."""

    def __init__(self):
        self.clients, self.codes, self.tokens, self.refresh = {}, {}, {}, {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        return self.tokens.get(token)

    async def revoke_token(self, token):
        self.tokens.pop(token.token, None)

    def _issue(self, client_id, scopes, resource) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh,
                          scope=" ".join(scopes))


CUSTOM_METADATA = "/oauth/resource-metadata"


def custom_metadata(app, resource: str, issuer: str):
    """The app, its protected-resource metadata moved to CUSTOM_METADATA (see the module's docstring)."""
    at = resource.split("/mcp")[0] + CUSTOM_METADATA
    document = json.dumps({"resource_documentation": resource, "resource": resource, "authorization_servers": [issuer],
                           "scopes_supported": ["mcp"], "bearer_methods_supported": ["header"]}).replace("/", "\\/")

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"] in (CUSTOM_METADATA, "/.well-known/oauth-protected-resource/mcp"):
            found = scope["path"] == CUSTOM_METADATA
            body = document.encode() if found else b"not here"
            await send({"type": "http.response.start", "status": 200 if found else 404,
                        "headers": [(b"content-type", b"application/json" if found else b"text/plain"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return

        async def sending(message):
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = [(n, v) for n, v in message["headers"] if n.lower() != b"www-authenticate"]
                headers.append((b"www-authenticate", f'Bearer error="invalid_token", resource_metadata="{at}"'.encode()))
                message = {**message, "headers": headers}
            await send(message)
        await app(scope, receive, sending)
    return wrapped


def planted(fault: str, app):
    """The app, with its 401 challenges changed as `fault` says."""
    if fault not in ("no-challenge", "bare-challenge", "old-revision"):
        return app

    async def wrapped(scope, receive, send):
        async def sending(message):
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = [(n, v) for n, v in message["headers"] if n.lower() != b"www-authenticate"]
                if fault != "no-challenge":
                    headers.append((b"www-authenticate", b'Bearer error="invalid_token"'))
                message = {**message, "headers": headers}
            await send(message)

        async def receiving():
            message = await receive()
            if fault == "old-revision" and message["type"] == "http.request" and b'"initialize"' in message["body"]:
                message = {**message, "body": message["body"].replace(b'"2025-11-25"', b'"2025-06-18"')}  # same length
            return message
        await app(scope, receiving, sending)
    return wrapped


async def main() -> None:
    as_port, rs_port = int(sys.argv[1]), int(sys.argv[2])
    fault = sys.argv[3] if len(sys.argv) > 3 else ""
    resource = f"http://127.0.0.1:{rs_port}/mcp"
    issuer = f"http://127.0.0.1:{as_port}/"  # as the metadata writes it (a URL with its path)
    if fault == "insecure-issuer":
        import mcp.server.auth.routes as routes

        routes.validate_issuer_url = lambda url: None  # the SDK refuses plain http off loopback: the fault planted
        issuer = f"http://auth.mcptap.test:{as_port}/"
    provider = MemoryAS()
    as_app = Starlette(routes=create_auth_routes(
        provider, AnyHttpUrl(issuer), client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"],
                                                                                default_scopes=["mcp"])))
    open_ = fault.endswith("-origin")
    server = MCPServer("mcptap-oauth-test-server") if open_ else MCPServer(
        "mcptap-oauth-test-server", token_verifier=ProviderTokenVerifier(provider), auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=["mcp"],
                                         # the audience is the URL the client used (a proxy's): not checked here
                                         validate_token_resource=False))

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    rs_app = planted(fault, server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=fault != "open-origin", allowed_hosts=[f"127.0.0.1:{rs_port}"],
        allowed_origins=[f"http://127.0.0.1:{rs_port}"])))
    if fault == "custom-metadata":
        rs_app = custom_metadata(rs_app, resource, issuer)
    servers = [uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
               for app, port in ((as_app, as_port), (rs_app, rs_port))]
    await asyncio.gather(*(s.serve() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())
