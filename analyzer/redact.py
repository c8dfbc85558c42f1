"""Credentials out of what is stored (spec/contract.md, Redaction): HTTP headers that carry
them and token query parameters. A value is replaced by a stable keyed hash, so the same secret
gives the same replacement and a reader can still tell two tokens apart, without the secret
being recoverable from the file.

The key lives outside the database (a file in the user's config folder, created once with mode
0600, or `MCPTAP_REDACTION_KEY`): a key kept beside the hashes would let anyone holding the file
test guesses of a weak password offline. Where no key file can be kept, a key for this process is
used and the replacement is stable within the run."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

KEY_ENV = "MCPTAP_REDACTION_KEY"

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "x-access-token", "x-token", "x-secret", "x-client-secret", "x-goog-api-key",
    "anthropic-api-key", "openai-api-key",
})
"""Header names (lower case) whose value is a credential."""

_CREDENTIAL_NAME = re.compile(
    r"(?:^|[-_.])(?:token|access[-_]?token|refresh[-_]?token|id[-_]?token|api[-_]?key|apikey|secret|"
    r"client[-_]?secret|password|passwd|auth|sig|signature|code)$", re.IGNORECASE)
"""Query parameter names (and header names beyond the list above) that carry a credential."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9._~+-]*)\s+(\S.*)$")


def _key_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcptap" / "redaction.key"


def load_key() -> bytes:
    configured = os.environ.get(KEY_ENV)
    if configured:
        return configured.encode("utf-8")
    path = _key_file()
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(key.hex() + "\n")
    except FileExistsError:  # another recorder made it first
        try:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            pass
    except OSError:
        pass
    return key


class Redactor:
    """Replaces credential values; `keep=True` (`--keep-credentials`) replaces nothing."""

    def __init__(self, key: bytes | None = None, *, keep: bool = False):
        self.keep = keep
        self._names: dict[str, bool] = {}  # header name (lower case) -> carries a credential
        self._key = key if key is not None else (b"" if keep else load_key())

    def mask(self, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
        return f"[redacted:{digest[:16]}]"

    def header_value(self, name: str, value: str) -> str | None:
        """The value to store for a credential header, or None when the header is no credential."""
        lower = name.lower()
        secret = self._names.get(lower)
        if secret is None:
            secret = self._names[lower] = lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_NAME.search(lower))
        if self.keep or not secret:
            return None
        if lower in ("cookie", "set-cookie"):
            return "; ".join(self._cookie(part) for part in value.split(";"))
        scheme = _SCHEME.match(value)
        if scheme and lower.endswith("authorization"):  # keep the scheme: "Bearer [redacted:...]"
            return f"{scheme.group(1)} {self.mask(scheme.group(2))}"
        return self.mask(value)

    def _cookie(self, part: str) -> str:
        name, eq, value = part.strip().partition("=")
        if not eq:
            return part.strip()
        if "=" in value or name.lower() in ("path", "domain", "expires", "max-age", "samesite"):
            return f"{name}={value}"  # a Set-Cookie attribute, not a secret
        return f"{name}={self.mask(value)}"

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
        parts = urlsplit(url)
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
