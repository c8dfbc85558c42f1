"""Frame-log JSONL as mcptap writes it (docs/contract.md): frame, stderr and session records
and their lines, as `export`, the spool and the bundle write them; framelog.py reads them."""

from __future__ import annotations

import base64
import json
from json.encoder import encode_basestring  # the C encoder when available

from mcptap.wire.bounded import CUT
from mcptap.wire.exchangelog import frame_refs
from mcptap.wire.sessionfields import SESSION_FIELDS
from mcptap.wire.textsafe import json_text

DIRECTIONS = ("c2s", "s2c")
VERSION = 2
"""The frame-log version `export` writes (a session record's `version`); import reads 1 and 2."""


def _raw_fields(raw: bytes) -> dict:
    try:
        return {"raw": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_b64": base64.b64encode(raw).decode("ascii")}


def dumps(record: dict) -> str:
    """One line of frame-log (without the newline); JSON escapes keep it on one line, and write
    each character a terminal would act on or hide (textsafe.json_text): the same values."""
    return json_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


def frame_record(session: str, seq: int, ts: float, direction: str, raw: bytes, incomplete: bool = False,
                 redacted: str | None = None, truncated: int | None = None, exchange: str | None = None,
                 event_id: str | None = None) -> dict:
    """`redacted`: the frames column (JSON array text of the member paths redaction replaced);
    `truncated`: the full size of a frame its recorder stored cut at --max-frame (`meta.truncated`);
    `exchange`, `event_id`: the HTTP exchange it crossed in and its SSE event id."""
    rec = {"session": session, "seq": seq, "ts": ts, "direction": direction, **_raw_fields(raw)}
    meta = {}
    if truncated is not None:
        meta["truncated"] = truncated
    elif incomplete:
        meta["incomplete"] = True
    if redacted:
        meta["redacted"] = json.loads(redacted)
    if exchange is not None or event_id is not None:
        meta.update(frame_refs(exchange, event_id))
    if meta:
        rec["meta"] = meta
    return rec


def stderr_record(session: str, seq: int, ts: float, raw: bytes, incomplete: bool = False) -> dict:
    rec = {"record": "stderr", "session": session, "seq": seq, "ts": ts, **_raw_fields(raw)}
    if incomplete:
        rec["meta"] = {"incomplete": True}
    return rec


def _raw_json(stored: str | bytes) -> str:
    if isinstance(stored, str):
        return '"raw":' + encode_basestring(stored)
    return '"raw_b64":"' + base64.b64encode(stored).decode("ascii") + '"'


def frame_line(row: tuple) -> str:
    """The frame-log line of a store row (store.frame_row, or store.http_frame_row with its
    exchange and SSE event id), built without json.dumps: the fast path of the recorder's spool.
    Same content as dumps(frame_record(...))."""
    if len(row) == 10:
        sid, seq, ts, direction, stored, size, incomplete, exchange, event_id, redacted = row
    else:
        (sid, seq, ts, direction, stored, size, incomplete, redacted), exchange, event_id = row, None, None
    parts = (([f'"truncated":{size}'] if incomplete == CUT else ['"incomplete":true']) if incomplete else []) + \
        ([f'"redacted":{redacted}'] if redacted else []) + \
        [f'"{name}":{encode_basestring(value)}' for name, value in frame_refs(exchange, event_id).items()]
    meta = ',"meta":{' + ",".join(parts) + "}" if parts else ""
    return f'{{"session":{encode_basestring(sid)},"seq":{seq},"ts":{ts!r},"direction":"{direction}",{_raw_json(stored)}{meta}}}'


def stderr_line(row: tuple) -> str:
    """The frame-log line of a stderr row (store.stderr_row)."""
    sid, seq, ts, stored, incomplete = row
    meta = ',"meta":{"incomplete":true}' if incomplete else ""
    return f'{{"record":"stderr","session":{encode_basestring(sid)},"seq":{seq},"ts":{ts!r},{_raw_json(stored)}{meta}}}'


def session_record(row: dict, *, spool: bool = False, whole: bool = False) -> dict:
    """A session's row as a frame-log record: SESSION's recorded members under the same names
    and values (docs/contract.md; `session` is its id, `command` the argument list). `whole`: the
    record is the session's whole row (`version` 2, what `export` writes)."""
    rec = {"record": "session", "session": row["id"], **({"version": VERSION} if whole else {})}
    rec.update({c: row[c] for c in SESSION_FIELDS if c != "id" and row.get(c) is not None})
    if isinstance(rec.get("command"), str):
        rec["command"] = command_list(rec["command"])
    if spool:
        rec["spool"] = True
    return rec


def command_list(text: str):
    """A stored command line (a JSON array of strings) as the list; other text as it is."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, list) and all(isinstance(a, str) for a in value) else text


