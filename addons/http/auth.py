"""OAuth as it passes the HTTP tap (MCP basic/authorization; RFC 9728, RFC 8414, OAuth 2.1, RFC 7591):
which exchanges are the authorization flow's rather than MCP's (`role`), and, for `mcptap proxy`
in reverse mode, the two values that must name the proxy for the flow to work through it
(`Rewriter`): the protected-resource metadata's `resource` (RFC 9728 §3.3: a client MUST NOT use
metadata whose `resource` is not the URL it used) and the `resource_metadata` URL of a 401/403
`WWW-Authenticate: Bearer` challenge. Nothing else is changed: tokens, the client's `resource=`
parameter, the authorization servers and JSON-RPC bodies pass as they came. The metadata a
challenge names may be anywhere (its `resource_metadata` URL, `metadata_target`): a request for it
is discovery too. Nothing here imports mitmproxy."""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from urllib.parse import parse_qsl, urlsplit

DISCOVERY_PATHS = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server",
                   "/.well-known/openid-configuration")
PRM_PATH = DISCOVERY_PATHS[0]
ROLES = ("auth-discovery", "auth-register", "auth-authorize", "auth-token", "auth-challenge", "http-error")
"""The roles an exchange that is not MCP is stored under (`exchanges.role`)."""

_RESOURCE_METADATA = re.compile(r'(resource_metadata\s*=\s*")([^"]*)(")', re.IGNORECASE)


def role(method: str, path: str, content_type: str | None, body: bytes) -> str | None:
    """The authorization flow's role of a request that is not MCP, or None (not OAuth either)."""
    target, _, query = path.partition("?")
    if any(well_known in target for well_known in DISCOVERY_PATHS) or target.endswith("/.well-known/openid-configuration"):
        return "auth-discovery"
    media = (content_type or "").split(";")[0].strip().lower()
    if method == "POST" and media == "application/x-www-form-urlencoded" and b"grant_type=" in body:
        return "auth-token"
    if method == "POST" and media.endswith("json") and b'"redirect_uris"' in body:
        return "auth-register"
    if method == "GET" and query:
        names = {k for k, _ in parse_qsl(query, keep_blank_values=True)}
        if "response_type" in names and "client_id" in names:
            return "auth-authorize"
    return None


def challenge_urls(value: str) -> list[str]:
    """The `resource_metadata` URLs a `WWW-Authenticate` value names."""
    return [m.group(2) for m in _RESOURCE_METADATA.finditer(value)]


def metadata_target(url: str) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path with query) of an absolute http(s) URL, as a request for it
    is seen (hosts lower-cased, the default port written out); None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80), path


def refusal_role(status: int | None, challenge: bytes | None) -> str | None:
    """The role of an MCP exchange's answer that is an HTTP error carrying no JSON-RPC message."""
    if status in (401, 403) and challenge is not None and challenge.lstrip().lower().startswith(b"bearer"):
        return "auth-challenge"
    return "http-error" if isinstance(status, int) and status >= 400 else None


def origin(url: str) -> str:
    """scheme://host[:port] of a URL, lower-cased as RFC 3986 compares them."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class Rewriter:
    """Rewrites what names the upstream (`upstream`: its origin) into the proxy's public origin:
    `public` (`--public-url`), else the origin the client used (its Host)."""

    def __init__(self, upstream: str, public: str | None = None) -> None:
        self.upstream = origin(upstream)
        self.public = origin(public) if public else None

    def public_origin(self, host: str | None) -> str | None:
        return self.public or (f"http://{host}" if host else None)

    def _swap(self, url: str, public: str) -> str | None:
        if origin(url) != self.upstream or public == self.upstream:
            return None
        return public + url[len(self.upstream):] if url.lower().startswith(self.upstream) else None

    def challenge(self, value: str, public: str) -> str | None:
        """A `WWW-Authenticate` value with its `resource_metadata` URL made the proxy's, or None
        when nothing in it names the upstream."""
        changed = False

        def swap(m: re.Match) -> str:
            nonlocal changed
            new = self._swap(m.group(2), public)
            if new is None:
                return m.group(0)
            changed = True
            return m.group(1) + new + m.group(3)

        out = _RESOURCE_METADATA.sub(swap, value)
        return out if changed else None

    def metadata(self, body: bytes, public: str) -> bytes | None:
        """Protected-resource metadata with its `resource` made the proxy's; None when it does
        not name the upstream (or is not a JSON object). Only that member's value changes (the
        last `resource`, which parsers take, however its name and value are escaped); its
        slashes stay escaped if they were."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        found = _resource_member(text)
        if found is None:
            return None
        resource, start, end = found
        new = self._swap(resource, public)
        if new is None:
            return None
        written = json.dumps(new, ensure_ascii=False)
        if "\\/" in text[start:end]:
            written = written.replace("/", "\\/")
        return (text[:start] + written + text[end:]).encode("utf-8")


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _resource_member(text: str) -> tuple[str, int, int] | None:
    """The string value of the last top-level `resource` member of a JSON object, and where
    its text starts and ends; None when the text is no object or has no such string."""
    try:
        pos = _SPACE.match(text, 0).end()
        if text[pos:pos + 1] != "{":
            return None
        pos = _SPACE.match(text, pos + 1).end()
        found = None
        if text[pos:pos + 1] == "}":
            return None
        while True:
            if text[pos:pos + 1] != '"':
                return None
            name, pos = scanstring(text, pos + 1)
            pos = _SPACE.match(text, pos).end()
            if text[pos:pos + 1] != ":":
                return None
            start = _SPACE.match(text, pos + 1).end()
            value, pos = _DECODER.raw_decode(text, start)
            if name == "resource":
                found = (value, start, pos) if isinstance(value, str) else None
            pos = _SPACE.match(text, pos).end()
            if text[pos:pos + 1] == "}":
                return found if not text[pos + 1:].strip(" \t\n\r") else None
            if text[pos:pos + 1] != ",":
                return None
            pos = _SPACE.match(text, pos + 1).end()
    except (ValueError, RecursionError):
        return None
