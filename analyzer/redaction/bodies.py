"""Credentials out of the bodies of HTTP exchanges that are not MCP (OAuth 2.1 and RFC 7591: a
token request's form, a token answer's JSON, a registration's client secret): each value of a
credential member or form field (`access_token`, `refresh_token`, `id_token`, `code`,
`code_verifier`, `client_secret`, `registration_access_token`, assertions, ...) replaced by its
keyed hash (`Redactor.mask`: the same secret gives the same stand-in everywhere, so a code is
still seen going from the redirect to the token request). Only those values change: every other
byte of the body stays as it crossed."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, quote

from mcptap.redaction.http import CREDENTIAL_NAME, Redactor

BODY_LIMIT = 1 << 16
"""Bytes of a non-MCP body that are stored (a discovery document, a token answer: a few hundred)."""

_FORM = "application/x-www-form-urlencoded"


def _secret_name(name: str) -> bool:
    return bool(CREDENTIAL_NAME.search(name))


def redact_body(redactor: Redactor, content_type: str | None, body: bytes | None) -> tuple[str | None, list[str]]:
    """The body as stored (text, cut at BODY_LIMIT) and the names of what was redacted in it
    (`body:NAME`)."""
    if not body:
        return None, []
    text = body[:BODY_LIMIT].decode("utf-8", "surrogateescape")
    if redactor.keep:
        return text, []
    media = (content_type or "").split(";")[0].strip().lower()
    if media == _FORM:
        return _form(redactor, text)
    if media.endswith(("/json", "+json")) or text.lstrip().startswith("{"):
        return _json(redactor, text)
    return text, []


def _form(redactor: Redactor, text: str) -> tuple[str, list[str]]:
    pairs = parse_qsl(text, keep_blank_values=True)
    if not any(_secret_name(k) for k, _ in pairs):
        return text, []
    redacted, out = [], []
    for k, v in pairs:
        if _secret_name(k) and v:
            redacted.append("body:" + k)
            v = redactor.mask(v)
        out.append(f"{quote(k, safe='')}={quote(v, safe='[]:')}")
    return "&".join(out), redacted


def _json(redactor: Redactor, text: str) -> tuple[str, list[str]]:
    try:
        value = json.loads(text)
    except ValueError:
        return text, []
    found: list[tuple[str, str]] = []
    _walk(value, found)
    if not found:
        return text, []
    redacted = []
    rebuilt = False
    for name, secret in found:
        redacted.append("body:" + name)
        written, masked = json.dumps(secret), json.dumps(redactor.mask(secret))
        if written in text:
            text = text.replace(written, masked)
        else:  # written with escapes of its own: the document is written again
            rebuilt = True
    if rebuilt:
        _mask_in(value, redactor)
        text = json.dumps(value)
    return text, redacted


def _walk(value, found: list) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and v and _secret_name(k):
                found.append((k, v))
            else:
                _walk(v, found)
    elif isinstance(value, list):
        for v in value:
            _walk(v, found)


def _mask_in(value, redactor: Redactor) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and v and _secret_name(k):
                value[k] = redactor.mask(v)
            else:
                _mask_in(v, redactor)
    elif isinstance(value, list):
        for v in value:
            _mask_in(v, redactor)
