"""Credentials out of HTTP: headers that carry them, token query parameters and URL passwords
(`Redactor`)."""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import parse_qsl, quote, urlunsplit

from mcptap.redaction import cookies
from mcptap.wire.urls import split_url
from mcptap.redaction.keys import MASKED, load_key

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "x-access-token", "x-token", "x-secret", "x-client-secret", "x-goog-api-key",
    "anthropic-api-key", "openai-api-key", "x-mcp-key",
})
"""Header names (lower case) whose value is a credential."""

CREDENTIAL_NAME = _CREDENTIAL_NAME = re.compile(
    r"(?:^|[-_.])(?:token|access[-_]?token|refresh[-_]?token|id[-_]?token|id[-_]?token[-_]?hint|api[-_]?key|apikey|"
    r"key|jwt|secret|client[-_]?secret|password|passwd|pwd|auth|authorization|bearer|sig|signature|code|verifier|assertion)$", re.IGNORECASE)
"""Query parameter names (and header names beyond the list above) that carry a credential."""

CHALLENGE_HEADERS = frozenset({"www-authenticate", "proxy-authenticate"})
"""Header names whose value is a challenge (`Bearer error="invalid_token", resource_metadata="..."`):
it asks for a credential and carries none."""

URL_HEADERS = frozenset({"referer", "location", "content-location"})
"""Header names whose value is a URL: its token query parameters and password are redacted as the
request URL's are (a token in the page a request came from)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9._~+-]*)\s+(\S.*)$")
_BEARER = re.compile(r"bearer\s+\S", re.IGNORECASE)


class Redactor:
    """Replaces credential values; `keep=True` (`--keep-credentials`) replaces nothing."""

    def __init__(self, key: bytes | None = None, *, keep: bool = False):
        self.keep = keep
        self._names: dict[str, bool] = {}  # header name (lower case) -> carries a credential
        self._key = key if key is not None else (b"" if keep else load_key())

    def mask(self, secret: str) -> str:
        if MASKED.fullmatch(secret):
            return secret
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"[redacted:{digest[:16]}]"

    def credential(self, secret: str, *, scheme: bool = False) -> str:
        """The stand-in of a secret; `scheme`: a value that may begin with an authentication
        scheme, which is kept ("Bearer [redacted:...]")."""
        found = _SCHEME.match(secret) if scheme else None
        if found:
            return f"{found.group(1)} {self.mask(found.group(2))}"
        return self.mask(secret)

    def header_value(self, name: str, value: str) -> str | None:
        """The value to store for a header that carries a credential, or None when it carries
        none: a credential header, a URL header (Referer) holding a token, a `Bearer` token
        under any name."""
        lower = name.lower()
        if lower in CHALLENGE_HEADERS:
            return None
        secret = self._names.get(lower)
        if secret is None:
            secret = self._names[lower] = lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_NAME.search(lower))
        if self.keep:
            return None
        if not secret:
            if lower in URL_HEADERS:
                url, redacted = self.url(value)
                return url if redacted else None
            return self.credential(value, scheme=True) if _BEARER.match(value) else None
        if lower == "cookie":
            return cookies.cookie(value, self.mask)
        if lower == "set-cookie":
            return cookies.set_cookie(value, self.mask)
        return self.credential(value, scheme=lower.endswith("authorization"))

    def headers(self, fields: list[tuple[str, str]]) -> tuple[list[list[str]], list[str]]:
        """Headers as stored ([name, value] pairs) and the names that were redacted."""
        out, redacted = [], []
        for name, value in fields:
            masked = self.header_value(name, value)
            if masked is not None:
                redacted.append(name.lower())
                value = masked
            out.append([name, value])
        return out, redacted

    def url(self, url: str) -> tuple[str, list[str]]:
        """The URL with token query parameters and userinfo passwords masked, and what was."""
        if self.keep:
            return url, []
        parts = split_url(url)
        redacted: list[str] = []
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, colon, password = userinfo.partition(":")
            if colon:
                netloc = f"{user}:{quote(self.mask(password), safe='[]:')}@{host}"
                redacted.append("userinfo")
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_CREDENTIAL_NAME.search(k) for k, _ in pairs):
                rebuilt = []
                for k, v in pairs:
                    if _CREDENTIAL_NAME.search(k):
                        redacted.append("query:" + k)
                        v = self.mask(v)
                    rebuilt.append(f"{quote(k, safe='')}={quote(v, safe='[]:')}")
                query = "&".join(rebuilt)
        if not redacted:
            return url, []
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), redacted
