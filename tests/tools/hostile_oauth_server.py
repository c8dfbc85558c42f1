"""An OAuth-protected MCP server that answers as a hostile or careless one may (stdlib only, one
origin, so that `mcptap proxy` in front of it sees the whole flow): RFC 9728 and RFC 8414
metadata, a registration answer with a client secret and a registration access token, an
authorization answer as a redirect or as an OAuth `form_post` page (the code in a hidden input),
token answers with a UTF-8 byte order mark, over 64 KiB, with duplicate names or in UTF-16, and
cookies whose values end in `=` (base64 padding) or are named as Set-Cookie attributes are. Every
secret it hands out is in SECRETS (the test looks for each in what mcptap stored).
Usage: hostile_oauth_server.py PORT."""

from __future__ import annotations

import codecs
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

VARIANTS = ("bom", "big", "dup", "utf16", "plain")
"""Token answers (`POST /token?variant=NAME`)."""


def token_secrets(variant: str) -> dict[str, str]:
    return {"access_token": f"AT-{variant}-4f1c9e", "refresh_token": f"RT-{variant}-b27d05",
            "id_token": f"IDT-{variant}-93ea61", "first": f"ATFIRST-{variant}-0c5d8a"}


REGISTRATION = {"client_secret": "CS-reg-7e20b4", "registration_access_token": "RAT-reg-5a9f13"}
FORM_POST_CODE = "CODE-formpost-d81f47"
REDIRECT_CODE = "CODE-redirect-2b6c90"
COOKIES = {"sid": "Q09PS0lFLXNpZC02YjJh==", "path": "COOKIE-path-3c81e2", "domain": "COOKIE-domain-91b7d4",
           "expires": "COOKIE-expires-0f2a66", "max-age": "COOKIE-maxage-7d4e19", "samesite": "COOKIE-samesite-e3a5b0"}
SET_COOKIES = [f"{name}={value}; Path=/; HttpOnly; SameSite=Lax" for name, value in COOKIES.items()]

SECRETS = sorted({*(s for v in VARIANTS for s in token_secrets(v).values()), *REGISTRATION.values(), FORM_POST_CODE,
                  REDIRECT_CODE, *COOKIES.values()})
"""Every secret this server hands out or is sent by the test's client (cookies, codes)."""


def token_answer(variant: str) -> bytes:
    s = token_secrets(variant)
    plain = {"access_token": s["access_token"], "token_type": "Bearer", "expires_in": 3600,
             "refresh_token": s["refresh_token"], "id_token": s["id_token"]}
    if variant == "bom":
        return codecs.BOM_UTF8 + json.dumps(plain).encode()
    if variant == "big":
        return json.dumps({**plain, "padding": "p" * (100 << 10)}).encode()
    if variant == "dup":
        return (f'{{"access_token": "{s["first"]}", ' + json.dumps(plain)[1:]).encode()
    if variant == "utf16":
        return json.dumps(plain).encode("utf-16")
    return json.dumps(plain).encode()


def _handler(port: int):
    origin = f"http://127.0.0.1:{port}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _answer(self, status: int, body: bytes, ctype: str = "application/json", headers=()) -> None:
            self.send_response(status)
            if body or status != 204:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            if parts.path == "/.well-known/oauth-protected-resource/mcp":
                self._answer(200, json.dumps({"resource": f"{origin}/mcp", "authorization_servers": [f"{origin}/"],
                                              "scopes_supported": ["mcp"]}).encode())
            elif parts.path == "/.well-known/oauth-authorization-server":
                self._answer(200, json.dumps({
                    "issuer": f"{origin}/", "authorization_endpoint": f"{origin}/authorize",
                    "token_endpoint": f"{origin}/token", "registration_endpoint": f"{origin}/register",
                    "response_types_supported": ["code"], "response_modes_supported": ["query", "form_post"],
                    "code_challenge_methods_supported": ["S256"]}).encode())
            elif parts.path == "/authorize" and query.get("response_mode") == "form_post":
                page = (f'<html><body onload="document.forms[0].submit()"><form method="post" '
                        f'action="{query.get("redirect_uri", "")}"><input type="hidden" name="code" '
                        f'value="{FORM_POST_CODE}"/><input type="hidden" name="state" value="{query.get("state", "")}"/>'
                        f'</form></body></html>')
                self._answer(200, page.encode(), "text/html; charset=utf-8")
            elif parts.path == "/authorize":
                target = f'{query.get("redirect_uri", "http://127.0.0.1/cb")}?code={REDIRECT_CODE}&state={query.get("state", "")}'
                self._answer(302, b"", "text/plain", [("Location", target)])
            else:
                self._answer(404, b'{"error": "not_found"}')

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            parts = urlsplit(self.path)
            if parts.path == "/register":
                answer = {"client_id": "hostile-client", **REGISTRATION, "redirect_uris": ["http://127.0.0.1/cb"],
                          "client_secret_expires_at": 0}
                self._answer(201, json.dumps(answer).encode())
            elif parts.path == "/token":
                variant = dict(parse_qsl(parts.query)).get("variant", "plain")
                ctype = "application/json; charset=utf-16" if variant == "utf16" else "application/json"
                self._answer(200, token_answer(variant), ctype, [("Cache-Control", "no-store")])
            elif parts.path == "/mcp":
                self._mcp(body)
            else:
                self._answer(404, b'{"error": "not_found"}')

        def _mcp(self, body: bytes) -> None:
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                self._answer(401, b'{"error": "invalid_token"}', headers=[(
                    "WWW-Authenticate", f'Bearer error="invalid_token", resource_metadata="{origin}/.well-known/'
                                        'oauth-protected-resource/mcp"')])
                return
            message = json.loads(body)
            if "id" not in message:
                self._answer(202, b"")
                return
            result = {}
            if message.get("method") == "initialize":
                result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "hostile-oauth", "version": "1"}}
            answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            self._answer(200, answer, headers=[("Mcp-Session-Id", "hostile-session-1"),
                                               *(("Set-Cookie", c) for c in SET_COOKIES)])

    return Handler


def main() -> None:
    port = int(sys.argv[1])
    ThreadingHTTPServer(("127.0.0.1", port), _handler(port)).serve_forever()


if __name__ == "__main__":
    main()
