"""`mcptap redact`: the redaction a recorder applies, applied to a database already written (a
file recorded with --no-redact, or with fewer keys or paths than now wanted).

Frames whose credential members are replaced get their new bytes and the list of members
replaced (`frames.redacted`); the server's stderr lines and its command line (`sessions.command`)
and upstream URL lose their secrets as a recorder's redaction would have taken them; HTTP
exchanges go through the one redaction of an exchange the proxy runs (credential headers, token
query parameters, the credentials in OAuth bodies). The analysis of a session that changed is
dropped (it may quote what was replaced; `mcptap analyze` writes it again). Then the file is
rewritten (VACUUM, with secure_delete on) so that no replaced byte survives in free pages or the
write-ahead log."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from mcptap import store
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.redaction.exchanges import BODIES, redact_exchange

BATCH_FRAMES = 2000


@dataclass
class Scrubbed:
    sessions: int = 0
    frames: int = 0  # frames changed
    members: Counter = field(default_factory=Counter)  # JSON path -> times replaced
    exchanges: int = 0  # HTTP exchanges changed
    stderr_lines: int = 0  # stderr lines changed
    commands: int = 0  # sessions whose command line or upstream URL changed


def redact_database(db_path: str, *, sessions: list[str] | None = None, redaction: Redaction | None = None,
                    progress: Callable[[int], None] | None = None,
                    stage: Callable[[str, int | None], None] | None = None) -> Scrubbed:
    """`progress(n)`: n more frames looked at; `stage(what, frames)`: a new step begins (the
    frames, then the rewrite of the file)."""
    frames = FrameRedactor(redaction or Redaction())
    headers = Redactor(keep=False)
    conn = store.open_existing(db_path, write=True)
    out = Scrubbed()
    try:
        store.erase_on_write(conn)
        ids = store.resolve_sessions(conn, sessions) or store.session_ids(conn)
        if stage is not None:
            stage("redacting", store.count_frames(conn, ids))
        for sid in ids:
            with store.write_transaction(conn):
                changed = (_frames(conn, sid, frames, out, progress) + _exchanges(conn, sid, headers, out)
                           + _stderr(conn, sid, frames, out) + _session(conn, sid, frames, out))
                if changed:
                    store.clear_analysis(conn, sid)
                    out.sessions += 1
        if stage is not None:
            stage("rewriting the file", None)
        store.compact(conn)
    finally:
        conn.close()
    return out


def _frames(conn, sid: str, redactor: FrameRedactor, out: Scrubbed, progress) -> int:
    changed, seq = 0, 0
    while True:
        batch = store.frames_after(conn, sid, seq, BATCH_FRAMES)
        if not batch:
            return changed
        for seq, raw, already in batch:
            new, paths = redactor.frame(raw)
            if paths is None or new == raw:
                continue
            known = json.loads(already) if already else []
            store.replace_frame(conn, sid, seq, new, json.dumps(list(dict.fromkeys(known + paths))))
            out.frames += 1
            out.members.update(paths)
            changed += 1
        if progress is not None:
            progress(len(batch))


def _stderr(conn, sid: str, redactor: FrameRedactor, out: Scrubbed) -> int:
    if not store.has_table(conn, "stderr_lines"):
        return 0
    changed, seq = 0, 0
    while True:
        batch = store.stderr_after(conn, sid, seq, BATCH_FRAMES)
        if not batch:
            return changed
        for seq, raw in batch:
            new, found = redactor.text(raw)
            if found is not None and new != raw:
                store.replace_stderr(conn, sid, seq, new)
                out.stderr_lines += 1
                changed += 1


def _session(conn, sid: str, redactor: FrameRedactor, out: Scrubbed) -> int:
    row = store.get_session(conn, sid)
    fields = {c: row.get(c) for c in ("command", "upstream")}
    new = redactor.session_fields(fields)
    changed = {c: v for c, v in new.items() if v != fields[c]}
    if not changed:
        return 0
    store.replace_session_fields(conn, sid, changed)
    out.commands += 1
    return 1


def _exchanges(conn, sid: str, redactor: Redactor, out: Scrubbed) -> int:
    changed = 0
    for row in store.session_exchanges(conn, sid):
        update = changed_exchange(redactor, row)
        if update is not None:
            store.upsert_exchange(conn, {**row, **update})
            out.exchanges += 1
            changed += 1
    return changed


def changed_exchange(redactor: Redactor, row: dict) -> dict | None:
    """The columns of a stored `exchanges` row that the one redaction of an exchange
    (analyzer/redaction/exchanges.py) changes, `redacted` among them; None when it changes none."""
    fields = {c: row.get(c) for c in ("url", "endpoint", "request_type", "response_type")}
    for column in ("request_headers", "response_headers"):
        fields[column] = json.loads(row[column]) if row.get(column) else None
    fields["redacted"] = json.loads(row.get("redacted") or "[]")
    for column, _, _ in BODIES:
        if row.get(column):
            fields[column] = row[column] if isinstance(row[column], str) else bytes(row[column])
    new = redact_exchange(redactor, fields)
    update = {}
    for column in ("request_headers", "response_headers"):
        if new[column] is not None and [list(pair) for pair in new[column]] != fields[column]:
            update[column] = store.json_cell(new[column])
    for column in ("url", "endpoint", *(c for c, _, _ in BODIES)):
        if column in fields and new.get(column) != fields.get(column) and new.get(column) != _text(row.get(column)):
            update[column] = store.text_cell(new[column])
    if not update:
        return None  # nothing replaced: the row stays byte for byte as it is
    update["redacted"] = json.dumps(new.get("redacted") or [])
    return update


def _text(value):
    return value.decode("utf-8", "surrogateescape") if isinstance(value, (bytes, memoryview)) else value
