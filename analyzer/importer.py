"""`mcptap import`: bring logs that others wrote (or a spool the recorder left) into the store.
The format is detected from content: frame-log JSONL (framelog.py), including spools, and HTTP
captures (mitmproxy dumps and HAR), which are replayed through the capture's own recorder
(addons/capture_import.py: the one place where importing uses the capture side)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer import framelog, store
from analyzer.errors import DuplicateSession, ImportFormatError
from analyzer.ids import new_session_id

BATCH_ROWS = 10_000


@dataclass
class ImportedSession:
    id: str
    name: str
    frames: int = 0
    stderr_lines: int = 0
    merged: bool = False  # a spool merged into a session the database already had


@dataclass
class _Target:
    result: ImportedSession
    fields: dict
    created: bool  # a new row is still to be inserted
    or_ignore: bool
    source: str
    next_seq: int = 1
    next_err_seq: int = 1
    first_ts: float | None = None
    frames: list = field(default_factory=list)
    stderr: list = field(default_factory=list)


def detect_format(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except FileNotFoundError:
        raise ImportFormatError(f"no file {path}") from None
    except IsADirectoryError:
        raise ImportFormatError(f"{path} is a directory") from None
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc.strerror}") from None
    if head.startswith(store.SQLITE_HEADER):
        raise ImportFormatError(f"{path} is an SQLite database; use it with --db, or export it first")
    first = head.lstrip().split(b"\n", 1)[0]
    if b"\n" not in head and len(head) == 1 << 16 and first.startswith(b"{") and sniff_capture(head) is None:
        first = _first_line(path)  # a first line longer than the head: a frame-log with a big frame
    if first and framelog.looks_like_framelog(first):
        return "framelog"
    if not head.strip():
        raise ImportFormatError(f"{path} is empty")
    capture = sniff_capture(head)
    if capture is not None:
        return capture
    raise ImportFormatError(f"{path}: not a format mcptap imports (frame-log JSONL, a mitmproxy dump, HAR)")


def _first_line(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    return line.strip()
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc.strerror}") from None
    return b""


def sniff_capture(head: bytes) -> str | None:
    """'har', 'flows' (a mitmproxy dump: tnetstrings, `<length>:`), or None."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"{") and b'"log"' in text[:4096]:
        return "har"
    length, colon, _ = head[:12].partition(b":")
    if colon and length.isdigit():
        return "flows"
    return None


def import_file(conn: sqlite3.Connection, path: str, *, new_id: bool = False,
                warn: Callable[[str], None] = lambda m: None,
                progress: Callable[[int, int], None] | None = None, keep_credentials: bool = False,
                redaction=None) -> list[ImportedSession]:
    """Import one file in one transaction: all of it, or (on an error) none of it. Credentials
    are redacted on the way in (analyzer/redact.py; `redaction` a Redaction, default the
    contract's; `keep_credentials` keeps HTTP credentials as they were). `progress(frames,
    bytes)`: so many frames and bytes of the file read in all, as the reading goes (an HTTP
    capture: once, at its end)."""
    from analyzer.redact import FrameRedactor

    redactor = FrameRedactor(redaction)
    if redactor.off:
        redactor = None
    kind = detect_format(path)
    if kind != "framelog":  # an HTTP capture: read by mitmproxy, through the recorder addon
        from addons.capture_import import import_capture

        found = import_capture(conn, path, kind, new_id=new_id, keep_credentials=keep_credentials, warn=warn,
                               redactor=redactor)
        if progress is not None:
            progress(sum(s.frames for s in found), os.path.getsize(path))
        return found
    default_session = os.path.splitext(os.path.basename(path))[0]
    targets: dict[str, _Target] = {}
    conn.execute("BEGIN IMMEDIATE")
    try:
        for rec in framelog.read(path, default_session=default_session, warn=warn, progress=progress):
            target = targets.get(rec.session)
            if target is None:
                target = targets[rec.session] = _open_target(conn, rec, path, new_id)
            if isinstance(rec, framelog.SessionIn):
                target.fields.update(rec.fields)
                continue
            if target.first_ts is None or rec.ts < target.first_ts:
                target.first_ts = rec.ts
            if isinstance(rec, framelog.FrameIn):
                seq = rec.seq if rec.seq is not None else target.next_seq
                target.next_seq = max(target.next_seq, seq + 1)
                raw, paths = redactor.frame(rec.raw) if redactor is not None else (rec.raw, None)
                if rec.redacted or paths:
                    paths = json.dumps(list(dict.fromkeys((rec.redacted or []) + (paths or []))))
                target.frames.append((seq, rec.ts, rec.direction, raw, int(rec.incomplete), paths))
                if rec.transport and "transport" not in target.fields:
                    target.fields["transport"] = rec.transport
            else:
                seq = rec.seq if rec.seq is not None else target.next_err_seq
                target.next_err_seq = max(target.next_err_seq, seq + 1)
                target.stderr.append((seq, rec.ts, rec.raw, int(rec.incomplete)))
            if len(target.frames) + len(target.stderr) >= BATCH_ROWS:
                _flush(conn, target)
        for target in targets.values():
            _flush(conn, target)
            _finish(conn, target)
        conn.execute("COMMIT")
    except sqlite3.IntegrityError as exc:
        conn.execute("ROLLBACK")
        raise ImportFormatError(f"{path}: two frames of one session share a seq ({exc})") from None
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return [t.result for t in targets.values()]


def _open_target(conn, rec, path: str, new_id: bool) -> _Target:
    name = rec.session
    is_spool = isinstance(rec, framelog.SessionIn) and rec.spool
    fields: dict = {}  # filled from session records by import_file's loop
    if new_id:
        sid = new_session_id()
    else:
        sid = name
        if store.session_exists(conn, sid):
            if is_spool:  # the recorder's spool: add what the database is missing
                return _Target(ImportedSession(sid, name, merged=True), fields, created=False, or_ignore=True,
                               source=os.path.abspath(path))
            raise DuplicateSession(f"{path}: session {name!r} is already in the database "
                                   "(use --new-id to import it again under a new id)")
    return _Target(ImportedSession(sid, name), fields, created=True, or_ignore=is_spool,
                   source=os.path.abspath(path))


def _flush(conn, target: _Target) -> None:
    sid = target.result.id
    if target.created:
        _insert_session(conn, target)
    store.insert_frames(conn, sid, target.frames, or_ignore=target.or_ignore)
    store.insert_stderr(conn, sid, target.stderr, or_ignore=target.or_ignore)
    target.result.frames += len(target.frames)
    target.result.stderr_lines += len(target.stderr)
    target.frames, target.stderr = [], []


def _insert_session(conn, target: _Target) -> None:
    """The session's row, from what the file said of it so far (completed in _finish)."""
    row = {"transport": "import", "label": target.result.name, "source": target.source, **target.fields}
    row["id"] = target.result.id
    row.setdefault("started_at", target.first_ts if target.first_ts is not None else 0.0)
    store.insert_session(conn, row)
    target.created = False


def _finish(conn, target: _Target) -> None:
    """Session fields that came after the first frames (a spool's closing record, for one)."""
    sid = target.result.id
    fields = {k: v for k, v in target.fields.items() if k in store.SESSION_COLUMNS and k != "id"}
    if target.result.merged:
        store.end_session(conn, sid, fields.get("ended_at"), fields.get("exit_status"))
        return
    if fields:
        conn.execute(f"UPDATE sessions SET {', '.join(c + ' = ?' for c in fields)} WHERE id = ?",
                     [*fields.values(), sid])
    if "started_at" not in fields and target.first_ts is not None:
        conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (target.first_ts, sid))
