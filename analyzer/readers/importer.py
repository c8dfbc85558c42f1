"""`mcptap import`: bring logs that others wrote (or a spool the recorder left) into the store.
The format is detected from content: frame-log JSONL (framelog.py), including spools, and HTTP
captures (mitmproxy dumps and HAR), which are replayed through the capture's own recorder
(analyzer/readers/http_capture.py: the one place where importing uses the capture side)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcptap import store

from mcptap.readers import importstate, kinds
from mcptap.readers.bundle import is_bundle
from mcptap.readers.exchangerows import ExchangeRows
from mcptap.readers.importstate import FrameLines, ImportedSession

from mcptap.wire import framelog
from mcptap.errors import DuplicateSession, ImportFormatError
from mcptap.ids import new_session_id

BATCH_ROWS = 10_000
"""Rows gathered (over all the file's sessions) before they are written into the transaction..."""
BATCH_BYTES = 16 << 20
"""... or bytes of frames: what the import holds in memory, whatever the file's size."""


@dataclass(slots=True)
class _Target:
    result: ImportedSession
    fields: dict
    created: bool  # a new row is still to be inserted
    or_ignore: bool
    source: str
    next_seq: int = 1
    next_err_seq: int = 1
    first_ts: float | None = None
    stored_before: tuple[int, int] = (0, 0)  # frames and stderr lines stored before (or_ignore: see _count)
    ord: int = 0  # the how-manyth session of the file
    batch: int = 0  # the last batch that had a row of it
    inserted: tuple | None = None  # (fields, started_at) its row was inserted with: see _finish
    frames: list = field(default_factory=list)  # rows whose raw bytes are stored as TEXT
    blobs: list = field(default_factory=list)  # ... and as BLOB
    stderr: list = field(default_factory=list)
    exchanges: list = field(default_factory=list)  # exchange rows to insert
    refs: list = field(default_factory=list)  # (exchange, event id, session id, seq) of frames that crossed HTTP
    whole: bool = False  # a version-2 session record: its fields are the session's whole row

    def state(self) -> tuple:
        """What importstate.SetAside keeps of a finished target (its rows written, its row complete)."""
        r = self.result
        return (r.name, self.ord, r.id, r.frames, r.stderr_lines, r.merged, self.or_ignore, self.next_seq,
                self.next_err_seq, self.first_ts, self.fields, *self.stored_before)

    @classmethod
    def restored(cls, state: tuple, source: str) -> "_Target":
        name, order, sid, frames, stderr_lines, merged, or_ignore, next_seq, next_err, first_ts, fields, bf, be = state
        return cls(ImportedSession(sid, name, frames, stderr_lines, bool(merged)), fields, created=False,
                   or_ignore=bool(or_ignore), source=source, next_seq=next_seq, next_err_seq=next_err,
                   first_ts=first_ts, stored_before=(bf, be), ord=order)

    def frame_seq(self, given: int | None) -> int:
        """A frame's seq: the one the log gave, else one past the highest so far in the session."""
        seq = given if given is not None else self.next_seq
        if seq >= self.next_seq:
            self.next_seq = seq + 1
        return seq

    def stderr_seq(self, given: int | None) -> int:
        seq = given if given is not None else self.next_err_seq
        if seq >= self.next_err_seq:
            self.next_err_seq = seq + 1
        return seq


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
    if is_bundle(head):
        return "bundle"
    if head.startswith(store.SQLITE_HEADER):
        raise ImportFormatError(f"{path} is an SQLite database; use it with --db, or export it first")
    first = head.lstrip().split(b"\n", 1)[0]
    if b"\n" not in head and len(head) == 1 << 16 and first.startswith(b"{") and sniff_capture(head) is None:
        if _long_first_line_is_framelog(path):  # a first line longer than the head: a frame-log with a big frame
            return "framelog"
    elif first and framelog.looks_like_framelog(first):
        return "framelog"
    if not head.strip():
        raise ImportFormatError(f"{path} is empty")
    capture = sniff_capture(head)
    if capture is not None:
        return capture
    raise ImportFormatError(f"{path}: not a format mcptap imports (frame-log JSONL, a mitmproxy dump, HAR)")


def _long_first_line_is_framelog(path: str) -> bool:
    """Whether the file's first line, longer than its head, is a frame-log record: read as it
    streams (wire/longline.py), its frame not kept."""
    try:
        for block in framelog.blocks(path, keep=1):
            if block.record is not None:
                return framelog.looks_like_record(block.record)
            line = block.data.split(b"\n", 1)[0].strip()
            return bool(line) and framelog.looks_like_framelog(line)
    except ImportFormatError:
        return False
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc.strerror}") from None
    return False


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
                redaction=None, locate: bool = False, max_frame: int | None = None,
                origin: str | None = None, kind: str | None = None) -> Sequence[ImportedSession]:
    """Import one file in one transaction: all of it, or (on an error) none of it. The file is
    streamed: rows are written into the transaction as they are read, BATCH_ROWS or BATCH_BYTES
    at a time, so memory does not grow with the file. Credentials are redacted on the way in
    (analyzer/redaction/__init__.py; `redaction` a Redaction, default the contract's; `keep_credentials`
    keeps HTTP credentials as they were). `progress(frames, bytes)`: frames and bytes of the
    file read so far. `locate`: each session's `lines` says where its frames were in the file.
    `max_frame`: a larger frame is stored cut and marked (analyzer/wire/bounded.py; default 128 MiB).
    `origin`: the file as the user named it, when `path` is its decompressed copy or stdin's (`-`):
    the sessions' `source`. `kind`: the reader (detect_format's name; default: what the content shows).
    Memory does not grow with the number of sessions either: once more than MAX_OPEN are open, a
    session no line has named for a batch is finished and set aside on disk (importstate.py), taken
    back if a later line names it, and the result is read back from
    there, as a sequence, in the order they first came; with `locate` every session is kept in
    memory, and the result is a list."""
    from mcptap.wire.bounded import CUT, DEFAULT_MAX_FRAME
    from mcptap.redaction import FrameRedactor

    redactor = FrameRedactor(redaction)
    if redactor.off:
        redactor = None
    kind = kind or detect_format(path)
    max_frame = max_frame or DEFAULT_MAX_FRAME
    other = kinds.READERS.get(kind)  # a bundle, an HTTP capture: not a frame log
    if other is not None:
        return other(conn, path, kind, import_file, new_id=new_id, warn=warn, progress=progress,
                     keep_credentials=keep_credentials, redaction=redaction, redactor=redactor, locate=locate,
                     max_frame=max_frame)
    default_session = os.path.splitext(os.path.basename(path))[0]
    source = origin if origin == "-" else os.path.abspath(origin or path)
    targets: dict[str, _Target] = {}  # the open sessions
    active: list[_Target] = []  # ... that have rows in this batch
    aside = None if locate else importstate.SetAside()  # the finished ones (locate: none are)
    pending_rows = pending_bytes = frames = 0
    batch, opened = 1, 0
    SessionIn, StderrIn, ExchangeIn = framelog.SessionIn, framelog.StderrIn, framelog.ExchangeIn
    exchanges = ExchangeRows(conn, new_id, keep_credentials)
    writer = store.import_writer(conn)
    try:
        try:
            with store.write_transaction(writer):  # the write lock: what `conn` reads of the file cannot change now
                for items, warnings, end in _prepared(path, default_session, redactor, max_frame):
                    for message in warnings:
                        warn(message)
                    for item in items:
                        if item.__class__ is tuple:  # a frame, redacted: see _prepare
                            (session, given, ts, direction, raw, text, incomplete, paths, line, transport, truncated,
                             refs) = item
                            kind = None
                        else:
                            session, kind = item.session, item.__class__
                        target = targets.get(session)
                        if target is None:
                            state = aside.take(session) if aside is not None else None
                            if state is not None:
                                target = _Target.restored(state, source)
                            else:
                                target = _open_target(conn, item, session, path, new_id, locate, warn, source)
                                target.ord, opened = opened, opened + 1
                            targets[session] = target
                        if target.batch != batch:
                            target.batch = batch
                            active.append(target)
                        if kind is SessionIn:
                            target.fields.update(item.fields)
                            target.whole = target.whole or item.whole
                            continue
                        if kind is ExchangeIn:
                            target.exchanges.append(exchanges.row(item, target.result.id))
                            pending_rows += 1
                            continue
                        if kind is StderrIn:
                            ts = item.ts
                        if target.first_ts is None or ts < target.first_ts:
                            target.first_ts = ts
                        if kind is None:
                            seq = target.frame_seq(given)
                            size = len(raw)
                            if truncated is not None:  # its recorder stored it cut (meta.truncated): its full size
                                size, incomplete = max(size, truncated), CUT
                            if len(raw) > max_frame:  # stored cut and marked, with its full size
                                raw, incomplete = raw[:max_frame], CUT
                                text = store.stored_as_text(raw)
                            (target.frames if text else target.blobs).append(
                                (target.result.id, seq, ts, direction, raw, size, incomplete, paths))
                            if refs is not None:
                                target.refs.append((exchanges.id_of(session, refs[0]), refs[1], target.result.id, seq))
                            pending_bytes += len(raw)
                            frames += 1
                            if target.result.lines is not None:
                                target.result.lines.seqs.append(seq)
                                target.result.lines.lines.append(line)
                            if transport and "transport" not in target.fields:
                                target.fields["transport"] = transport
                        else:
                            seq = target.stderr_seq(item.seq)
                            target.stderr.append((target.result.id, seq, ts, store.stored_raw(item.raw), int(item.incomplete)))
                            pending_bytes += len(item.raw)
                        pending_rows += 1
                        if pending_rows >= BATCH_ROWS or pending_bytes >= BATCH_BYTES:
                            for t in active:
                                _flush(writer, t)
                            if aside is not None and len(targets) > MAX_OPEN:
                                _set_aside(writer, targets, aside, batch)
                            active, batch = [], batch + 1
                            pending_rows = pending_bytes = 0
                    if progress is not None:
                        progress(frames, end)
                for target in targets.values():
                    _flush(writer, target)
                    _finish(writer, target)
        except sqlite3.IntegrityError as exc:
            raise ImportFormatError(f"{path}: two frames of one session share a seq ({exc})") from None
        for target in targets.values():
            if target.or_ignore:
                _count(conn, target)
        if aside is not None:
            aside.update_counts((sid, *_counted(conn, sid, before)) for sid, *before in aside.spooled())
            for target in targets.values():
                aside.put(target.state())
            return aside.results(ImportedSession)
    finally:
        if writer is not conn:
            writer.close()
    return [t.result for t in targets.values()]


def _prepare(block: framelog.Block, path: str, default_session: str, redactor) -> tuple[list, list[str]]:
    """A block's records, each frame as the tuple the writer stores it from (session, seq as
    written, ts, direction, bytes to store, whether they are stored as text, incomplete, the
    `redacted` column, line, transport, cut size, (exchange, SSE event id) or None): read
    (framelog.records) and redacted."""
    warnings: list[str] = []
    items: list = []
    as_text, FrameIn = store.stored_as_text, framelog.FrameIn
    if len(_NAMES) > 10_000:  # a log of many sessions: the cache stays small
        _NAMES.clear()
    for rec in framelog.records(block, path=path, default_session=default_session, warn=warnings.append,
                                names=_NAMES):
        if rec.__class__ is not FrameIn:
            if redactor is not None:  # a stderr line, a session's command line: redacted as at capture
                if rec.__class__ is framelog.StderrIn:
                    rec.raw = redactor.text(rec.raw)[0]
                elif rec.__class__ is framelog.SessionIn:
                    rec.fields = redactor.session_fields(rec.fields)
            items.append(rec)
            continue
        raw, paths = rec.raw, None
        if redactor is not None:
            raw, paths = redactor.frame(raw)
        if paths or rec.redacted:
            paths = json.dumps(list(dict.fromkeys((rec.redacted or []) + (paths or []))))
        refs = (rec.exchange, rec.event_id) if rec.exchange is not None or rec.event_id is not None else None
        items.append((rec.session, rec.seq, rec.ts, rec.direction, raw, as_text(raw, rec.utf8), int(rec.incomplete),
                      paths, rec.line, rec.transport, rec.truncated, refs))
    return items, warnings


_NAMES: dict[str, str] = {}  # session names checked


def _prepared(path: str, default_session: str, redactor, max_frame: int | None = None):
    """(items, warnings, bytes read) of each block of the file, in file order; a frame line
    longer than `max_frame` read as it streams, only `max_frame` bytes of its frame kept."""
    for block in framelog.blocks(path, keep=max_frame):
        yield (*_prepare(block, path, default_session, redactor), block.end)


SPOOL_MARKS = ("recorder", "host", "pid", "started_at")
"""What ties a spool to the session it belongs to: the recorder that wrote both puts the session's
own row, these columns included, at the head of its spool. A spool merges only into a stored
session whose every one of them is known and the same."""


def _open_target(conn, rec, name: str, path: str, new_id: bool, locate: bool,
                 warn: Callable[[str], None], source: str) -> _Target:
    lines = FrameLines() if locate else None
    is_spool = isinstance(rec, framelog.SessionIn) and rec.spool
    fields: dict = {}  # filled from session records by import_file's loop
    if new_id:
        sid = new_session_id()
    else:
        sid = name
        if store.session_exists(conn, sid):
            if is_spool and _spool_of(conn, sid, rec.fields):  # the recorder's spool: add what the database is missing
                target = _Target(ImportedSession(sid, name, merged=True, lines=lines), fields, created=False,
                                 or_ignore=True, source=source)
                target.stored_before = store.stored_counts(conn, sid)
                return target
            if not is_spool:
                raise DuplicateSession(f"{path}: session {name!r} is already in the database "
                                       "(use --new-id to import it again under a new id)")
            sid = new_session_id()
            warn(f"{path}: session {name!r} says it is a spool of a session the database holds, but was not "
                 f"written by that session's recorder ({', '.join(SPOOL_MARKS)} differ): imported as new session {sid}")
    return _Target(ImportedSession(sid, name, lines=lines), fields, created=True, or_ignore=is_spool, source=source)


def _spool_of(conn, sid: str, fields: dict) -> bool:
    """Whether a spool whose session record has `fields` was written by the recorder of stored
    session `sid` (SPOOL_MARKS)."""
    row = store.session_fields(conn, sid, SPOOL_MARKS)
    return row is not None and all(v is not None and fields.get(k) == v for k, v in zip(SPOOL_MARKS, row))


MAX_OPEN = 1000
"""Sessions an import keeps in memory beyond those of the current batch: past this, those that
had no row in the last batch are finished and set aside (importstate.py)."""


def _set_aside(writer, targets: dict[str, _Target], aside, batch: int) -> None:
    """Finish the sessions that had no row in this batch and set their state aside."""
    for name in [name for name, t in targets.items() if t.batch != batch]:
        target = targets.pop(name)
        _flush(writer, target)
        _finish(writer, target)
        aside.put(target.state())
    aside.flush()


def _counted(conn, sid: str, before) -> tuple[int, int]:
    """A spool's frames and stderr lines as stored (a row the database had already was not
    added), once committed."""
    frames, stderr = store.stored_counts(conn, sid)
    return frames - before[0], stderr - before[1]


def _count(conn, target: _Target) -> None:
    target.result.frames, target.result.stderr_lines = _counted(conn, target.result.id, target.stored_before)


def _flush(conn, target: _Target) -> None:
    if not (target.frames or target.blobs or target.stderr or target.exchanges or target.created):
        return
    if target.created:
        _insert_session(conn, target)
    store.insert_frame_bytes(conn, target.frames, target.blobs, or_ignore=target.or_ignore)
    store.insert_rows(conn, (), target.stderr, or_ignore=target.or_ignore)
    for row in target.exchanges:
        store.insert_exchange(conn, row)
    store.set_frame_refs(conn, target.refs)
    target.exchanges, target.refs = [], []
    target.result.frames += len(target.frames) + len(target.blobs)
    target.result.stderr_lines += len(target.stderr)
    target.frames, target.blobs, target.stderr = [], [], []


def _insert_session(conn, target: _Target) -> None:
    """The session's row, from what the file said of it so far (completed in _finish)."""
    if target.whole:  # the session's whole row, as exported: nothing of the import's own
        row = {"transport": "import", **target.fields}
    else:
        row = {"transport": "import", "label": target.result.name, "source": target.source, **target.fields}
    row["id"] = target.result.id
    row.setdefault("started_at", target.first_ts if target.first_ts is not None else 0.0)
    store.insert_session(conn, row)
    target.created = False
    target.inserted = (dict(target.fields), row["started_at"])


def _finish(conn, target: _Target) -> None:
    """Session fields that came after the first frames (a spool's closing record, for one)."""
    sid = target.result.id
    fields = {k: v for k, v in target.fields.items() if k in store.SESSION_COLUMNS and k != "id"}
    if target.result.merged:
        store.end_session(conn, sid, fields.get("ended_at"), fields.get("exit_status"))
        return
    if target.inserted is not None and target.inserted[0] == target.fields and (
            "started_at" in fields or target.first_ts is None or target.first_ts == target.inserted[1]):
        return  # the row was inserted with all of it
    if "started_at" not in fields and target.first_ts is not None:
        fields["started_at"] = target.first_ts
    store.replace_session_fields(conn, sid, fields)
