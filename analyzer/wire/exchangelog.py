"""Frame-log exchange records (docs/contract.md, Frame-log JSONL): an HTTP exchange's row as one
line, `{"record": "exchange", "session": ID, "id": ..., "method": ..., "url": ..., ...}`, and a
frame's transport reference (`meta.exchange`, `meta.event_id`): written from the stored row, read
back with every field's type checked."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

EXCHANGE_FIELDS = {
    "id": "text", "method": "text", "url": "text", "status": "int", "request_type": "text",
    "response_type": "text", "mcp_session_id": "text", "assigned_session": "text", "protocol_version": "text",
    "accept": "text", "last_event_id": "text", "content_encoding": "text", "endpoint": "text", "events": "int",
    "request_headers": "headers", "response_headers": "headers", "redacted": "names", "started_at": "time",
    "request_end": "time", "response_at": "time", "ended_at": "time", "outcome": "text",
    "role": "text", "request_body": "text", "response_body": "text", "rewritten": "text",
}
"""The fields of an exchange record, the `exchanges` table's columns but `session_id` (the
record's `session`), each of a kind: text, an integer, a time (Unix seconds), headers (a list
of [name, value] pairs of strings) or names (a list of strings). An exchange that is not MCP
(OAuth, an HTTP error) has its `role`, its bodies as stored and what the proxy `rewritten` (JSON
text), so that an export imported again is analysed as the recording was."""

REQUIRED = ("id", "method", "url", "started_at")
JSON_KINDS = ("headers", "names")  # stored as JSON text in their column
MAX_TIME = 9.2e9  # as framelog.MAX_TIME: Unix seconds within pandas' calendar
MAX_INT = 2**63 - 1


@dataclass(slots=True)
class ExchangeIn:
    session: str
    fields: dict  # the columns as read: headers and names as Python lists, the rest as stored
    line: int


def exchange_record(session: str, row: dict) -> dict:
    """The record of a stored `exchanges` row (headers and `redacted` from their JSON text)."""
    rec = {"record": "exchange", "session": session}
    for name, kind in EXCHANGE_FIELDS.items():
        value = row.get(name)
        if value is None:
            continue
        rec[name] = json.loads(value) if kind in JSON_KINDS else value
    return rec


def frame_refs(exchange: str | None, event_id: str | None) -> dict:
    """The `meta` members of a frame that crossed HTTP: its exchange and SSE event id."""
    refs = {}
    if exchange is not None:
        refs["exchange"] = exchange
    if event_id is not None:
        refs["event_id"] = event_id
    return refs


def read_refs(meta: dict) -> tuple[str | None, str | None]:
    """A frame's `meta.exchange` and `meta.event_id`, each a string or absent."""
    exchange, event_id = meta.get("exchange"), meta.get("event_id")
    if exchange is not None and (not isinstance(exchange, str) or not exchange):
        raise ValueError("'meta.exchange' must be a non-empty string")
    if event_id is not None and not isinstance(event_id, str):
        raise ValueError("'meta.event_id' must be a string")
    return exchange, event_id


def read_exchange(obj: dict, session: str, line: int, text) -> ExchangeIn:
    """An exchange record's fields, each checked; `text` makes a string storable (textsafe)."""
    fields = {}
    for name, kind in EXCHANGE_FIELDS.items():
        value = obj.get(name)
        if value is None:
            if name in REQUIRED:
                raise ValueError(f"an exchange record needs {name!r}")
            continue
        fields[name] = _checked(name, kind, value, text)
    if fields["id"] == "":
        raise ValueError("'id' must be a non-empty string")
    return ExchangeIn(session, fields, line)


def _checked(name: str, kind: str, value, text):
    if kind == "text":
        if not isinstance(value, str):
            raise ValueError(f"{name!r} must be a string")
        return text(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
            raise ValueError(f"{name!r} must be a non-negative integer")
        return value
    if kind == "time":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name!r} must be a number")
        value = float(value) if not isinstance(value, int) or abs(value) < 2**53 else math.inf
        if not -MAX_TIME <= value <= MAX_TIME:
            raise ValueError(f"{name!r} must be a time in Unix seconds (years 1677 to 2262)")
        return value
    if kind == "names":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{name!r} must be a list of strings")
        return value
    if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in value):
        raise ValueError(f"{name!r} must be a list of [name, value] pairs of strings")
    return value
