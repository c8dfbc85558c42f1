"""The store's row shapes: frames, stderr lines, sessions and exchanges as the tables hold them
(raw as TEXT when it is UTF-8, else BLOB), built from what capture and import hand over. No SQL."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mcptap.wire.sessionfields import SESSION_FIELDS


SQLITE_HEADER = b"SQLite format 3\x00"

# A frame row as the writers hand it over: (seq, ts, direction, raw bytes, incomplete flag[,
# redacted: JSON array text of the member paths redaction replaced]).
FrameRow = tuple
# A stderr line: (seq, ts, raw bytes, incomplete flag).
StderrRow = tuple[int, float, bytes, int]

SESSION_COLUMNS = SESSION_FIELDS  # the sessions table's columns: a frame-log session record's fields


@dataclass(frozen=True, slots=True)
class Frame:
    """A recorded frame as the store hands it out: its exact bytes, whether it is incomplete (no
    newline or an unfinished SSE event, or `cut` at the capture's --max-frame), the member paths
    redaction replaced, and over HTTP the exchange it crossed in and its SSE event id."""

    session_id: str
    seq: int
    ts: float
    direction: str
    raw: bytes
    incomplete: bool
    redacted: str | None = None  # JSON array text: the member paths redaction replaced
    exchange_id: str | None = None
    event_id: str | None = None
    cut: bool = False  # stored cut at the capture's --max-frame (incomplete too)


@dataclass(frozen=True, slots=True)
class StderrLine:
    session_id: str
    seq: int
    ts: float
    raw: bytes
    incomplete: bool


def stored_raw(raw: bytes) -> str | bytes:
    """TEXT when the bytes are UTF-8 without NUL (readable in datasette), else the BLOB as is.
    Either way `CAST(raw AS BLOB)` gives back the exact bytes."""
    if b"\x00" in raw:
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def stored_as_text(raw: bytes, utf8: bool = False) -> bool:
    """`stored_raw`'s rule without decoding what is known already: whether `raw` is stored as
    TEXT (UTF-8 without NUL). `utf8`: the bytes are known to be UTF-8 (encoded from text)."""
    if b"\x00" in raw:
        return False
    if utf8:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def stored_raws(lines: list[bytes]) -> list[str | bytes]:
    """`stored_raw` of each line, decoding the lot at once when it is all UTF-8 without NUL
    (the common case, several times faster than line by line)."""
    if not lines:
        return []
    joined = b"\n".join(lines)
    if b"\x00" not in joined:
        try:
            return joined.decode("utf-8").split("\n")  # a line holds no newline: one part each
        except UnicodeDecodeError:
            pass
    return [stored_raw(line) for line in lines]


def frame_row(session_id: str, seq: int, ts: float, direction: str, raw: bytes, incomplete: int,
              redacted: str | None = None) -> tuple:
    return (session_id, seq, ts, direction, stored_raw(raw), len(raw), incomplete, redacted)


def stderr_row(session_id: str, seq: int, ts: float, raw: bytes, incomplete: int) -> tuple:
    return (session_id, seq, ts, stored_raw(raw), incomplete)


# Rows in their final form, built once off the wire by a recorder and inserted as they are:
# frames (session_id, seq, ts, direction, stored raw, size, incomplete, redacted),
# stderr (session_id, seq, ts, stored raw, incomplete).
FrameDbRow = tuple[str, int, float, str, "str | bytes", int, int, "str | None"]
StderrDbRow = tuple[str, int, float, "str | bytes", int]

EXCHANGE_COLUMNS = (
    "id", "session_id", "method", "url", "status", "request_type", "response_type", "mcp_session_id",
    "assigned_session", "protocol_version", "accept", "last_event_id", "content_encoding", "endpoint", "events",
    "request_headers", "response_headers", "redacted", "started_at", "request_end", "response_at", "ended_at",
    "outcome", "role", "request_body", "response_body", "rewritten",
)


# -- text that came off the wire ------------------------------------------------------------------
# mitmproxy decodes header names and values, methods, paths and hosts as UTF-8 with
# `surrogateescape`: each byte that is not UTF-8 (obs-text such as `X-Name: caf\xe9`) becomes a lone
# surrogate, U+DC80 to U+DCFF, which SQLite cannot store. Two lossless spellings, one per kind of cell:
# - JSON cells (`request_headers`, `response_headers`): the lone surrogate as a `\udcXX` escape. The
#   JSON is valid text; `json.loads` gives the name or value back as it came, and
#   `.encode("utf-8", "surrogateescape")` its exact bytes.
# - Plain TEXT cells (`url`, the MCP header columns, `outcome`, session `upstream`, `label`,
#   `source`): each such byte percent-encoded (`%E9`), a URL's own spelling of a byte (the header
#   columns copy values whose exact bytes the headers JSON holds).

_SURROGATES = re.compile("[\ud800-\udfff]")


def json_cell(value) -> str:
    """JSON text of `value` (non-ASCII kept as it is) that SQLite can store: each lone surrogate
    written as its `\\uXXXX` escape."""
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii():  # the common case, told without a scan
        return text
    return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def text_cell(value):
    """A text cell SQLite can store: each lone surrogate of surrogate-escaped text written as the
    byte it stands for, percent-encoded (`%E9`; any other surrogate, its UTF-8 bytes so); a value
    that is not text, as it is."""
    if value.__class__ is not str or value.isascii() or not _SURROGATES.search(value):
        return value
    return _SURROGATES.sub(_percent_byte, value)


def _percent_byte(match: re.Match) -> str:
    char = match.group()
    raw = char.encode("utf-8", "surrogateescape" if "\udc80" <= char <= "\udcff" else "surrogatepass")
    return "".join(f"%{b:02X}" for b in raw)


def http_frame_row(session_id: str, seq: int, ts: float, direction: str, raw: bytes, exchange_id: str | None,
                   event_id: str | None, incomplete: int = 0, redacted: str | None = None) -> tuple:
    """A frame that crossed HTTP: the frames row with its exchange and SSE event id."""
    return (session_id, seq, ts, direction, stored_raw(raw), len(raw), incomplete, exchange_id, event_id, redacted)


def redact_row(row: tuple, redactor, raw_at: int = 4) -> tuple:
    """A stored row (frame_row or http_frame_row) with its frame redacted (analyzer/redaction/__init__.py
    FrameRedactor): the raw, its size and the `redacted` column (the last) replaced, when any
    member was (a frame stored cut keeps its full size: analyzer/wire/bounded.py)."""
    stored = row[raw_at]
    raw = stored.encode("utf-8", "surrogatepass") if isinstance(stored, str) else bytes(stored)
    new, paths = redactor.frame(raw)
    if paths is None:
        return row
    size = row[raw_at + 1] if row[raw_at + 2] == 2 else len(new)  # cut at --max-frame: its full size stays
    return row[:raw_at] + (stored_raw(new), size) + row[raw_at + 2:-1] + (json.dumps(paths),)
