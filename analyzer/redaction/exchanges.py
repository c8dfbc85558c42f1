"""The one redaction of an HTTP exchange, which capture, `mcptap import`, `mcptap redact` and the
bundle's check all run (`redact_exchange`): the credential headers (cookies by the cookie grammar),
the URL's and the legacy endpoint's token parameters and passwords, and the bodies that are no
frame (OAuth forms, token answers, form_post pages) by their content type, whatever their size,
byte order mark or duplicate names."""

from __future__ import annotations

from mcptap.redaction.bodies import redact_body
from mcptap.redaction.http import Redactor

BODIES = (("request_body", "request_type", ""), ("response_body", "response_type", "response:"))
"""Each body's column, the column of its content type, and how `redacted` names what was in it."""


def redact_exchange(redactor: Redactor, fields: dict) -> dict:
    """An exchange's fields (headers as [name, value] pairs, `redacted` a list, bodies as bytes
    or as text stored already) as they are stored: credentials replaced (unless the redactor
    keeps them), bodies as text cut at their limit, `redacted` naming what was replaced (added
    to what it named already; absent when nothing ever was)."""
    out, said = dict(fields), []
    if not redactor.keep:
        for column in ("request_headers", "response_headers"):
            if out.get(column) is not None:
                out[column], redacted = redactor.headers([tuple(pair) for pair in out[column]])
                said += redacted
        if out.get("url") is not None:
            out["url"], redacted = redactor.url(out["url"])
            said += redacted
        if out.get("endpoint") is not None:
            out["endpoint"], redacted = redactor.url(out["endpoint"])
            said += [f"endpoint:{what}" for what in redacted]
    for column, type_column, prefix in BODIES:
        if column in out:
            out[column], redacted = redact_body(redactor, out.get(type_column), out[column])
            said += [prefix + what for what in redacted]
    before = list(out.get("redacted") or [])
    added = [name for name in dict.fromkeys(said) if name not in before]
    if added:
        out["redacted"] = before + added
    return out
