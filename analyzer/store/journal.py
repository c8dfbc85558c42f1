"""Writes an HTTP capture into SQLite: many sessions at once, discovered as they start, with
their frames and exchanges.

The capture says what it saw as ops, appended to a `Collector` (its event loop never waits for a
lock a database write holds): sessions, request frames, exchanges, session ends, and the chunks
of SSE answers (which addons/http/streams.py cuts into frames). A `Sink` writes ops in one
transaction per batch, numbering each session's frames in time order; live, that happens in the
recorder process (addons/http/recorder.py), or in a thread here (`Journal`) when that process is
gone; an import writes its ops at once. If the database fails, the frames of each session go on
into a spool file beside it (frame-log JSONL, as the stdio writer does), a one-line warning says
where, and `mcptap import` brings them in later: nothing is dropped silently."""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable

from mcptap import store
from mcptap.errors import warn_stderr
from mcptap.store.ops import (STREAM_OPS, ChunkOp, CloseOp, EndOp, ExchangeOp, FrameOp, Op, SessionOp,
                              StreamOp)
from mcptap.store.writer import FLUSH_INTERVAL_S, Spool


class Collector:
    """What a capture says, as ops kept in order (analyzer/store/ops.py): sessions, frames,
    exchanges, session ends, and SSE answers' bytes. An import writes them in its own transaction
    (`number`, then `apply`)."""

    def __init__(self) -> None:
        self.ops: list[Op] | deque[Op] = []
        self.db_path = ""

    def session(self, session: dict) -> None:
        self.ops.append(SessionOp(session))

    def frame(self, row: tuple) -> None:
        self.ops.append(FrameOp(row))

    def exchange(self, row: dict) -> None:
        self.ops.append(ExchangeOp(row))

    def end(self, session_id: str, ended_at: float | None) -> None:
        self.ops.append(EndOp(session_id, ended_at))

    # an SSE answer's bytes, as they passed (cut into frames by addons/http/streams.py)
    def stream(self, exchange_id: str, session_id: str, encoding: str | None) -> None:
        self.ops.append(StreamOp(exchange_id, session_id, encoding))

    def chunk(self, exchange_id: str, ts: float, data: bytes | int) -> None:
        self.ops.append(ChunkOp(exchange_id, ts, data))

    def close_stream(self, exchange_id: str, ts: float) -> None:
        self.ops.append(CloseOp(exchange_id, ts))

    def close(self) -> None:
        pass


class Sink:
    """Writes ops into the database, numbered, a transaction per call; if the database fails,
    the frames of each session go on into a spool file beside it."""

    def __init__(self, db_path: str, *, warn: Callable[[str], None] = warn_stderr, redactor=None,
                 watch: Callable[[list[Op]], None] | None = None):
        """`watch(ops)`: told each batch numbered and redacted, as it is written (must not wait)."""
        self.watch = watch
        self.db_path = db_path
        self._warn = warn
        self.redactor = None if redactor is None or redactor.off else redactor
        self._sessions: dict[str, dict] = {}
        self._spools: dict[str, Spool] = {}
        self._seq: dict[str, int] = {}  # last seq given, per session
        self._numbered: list[tuple] | None = None  # the batch being written, numbered
        self._open_exchanges: dict[str, dict] = {}  # spooled exchanges not ended yet, by id
        self.failed: str | None = None
        self.conn: sqlite3.Connection | None = store.connect(db_path)  # a bad path is an error now, not later

    def write(self, ops: list[Op]) -> None:
        """Store `ops`; whatever goes wrong (a failing database, a row it refuses, a bug here),
        the frames go on into spool files and one line says why: recording never stops on it."""
        self._numbered: list[tuple] | None = None
        try:
            self._write(ops)
        except Exception as exc:  # noqa: BLE001 - a bug is said in one line; the frames are kept
            self._warn(f"cannot record a batch ({type(exc).__name__}: {exc}); its frames go to spool files beside "
                       f"{self.db_path} (mcptap import brings them in)")
            try:
                spilled = [op for op in ops if isinstance(op, (FrameOp, ExchangeOp, EndOp))]
                numbered = self._numbered or number(spilled, self._seq)
                self._spill(numbered)
            except Exception as again:  # noqa: BLE001
                self._warn(f"cannot spool that batch either ({type(again).__name__}: {again}): its frames are lost")

    def _write(self, ops: list[Op]) -> None:
        for op in ops:
            if op.__class__ is SessionOp:
                self._sessions[op.row["id"]] = op.row
            elif op.__class__ is FrameOp and op.row[0] not in self._seq and self.conn is not None:
                # a session another writer began (a recorder process that died): go on after its frames
                session_id = op.row[0]
                try:
                    last = self.conn.execute("SELECT max(seq) FROM frames WHERE session_id = ?", (session_id,)).fetchone()[0]
                except sqlite3.Error:
                    last = None  # the write below fails too, and says so
                self._seq[session_id] = last or 0
        self._numbered = number(ops, self._seq)
        ops = redact(self._numbered, self.redactor)
        if self.watch is not None:
            self.watch(ops)
        if self.conn is not None:
            try:
                with store.write_transaction(self.conn):
                    apply(self.conn, ops)
                return
            except Exception as exc:  # noqa: BLE001 - whatever keeps the store from working, the frames go on
                if not _store_failed(exc) and self._apply_each(ops):
                    return
                self.failed = str(exc) if isinstance(exc, (sqlite3.Error, OSError)) else f"{type(exc).__name__}: {exc}"
                try:
                    self.conn.close()
                except sqlite3.Error:
                    pass
                self.conn = None
                self._warn(f"cannot write to {self.db_path} ({self.failed}); frames go to spool files beside it "
                           "(mcptap import brings them in)")
        self._spill(ops)

    def _apply_each(self, ops: list[Op]) -> bool:
        """A batch holding a row the store refuses (a value SQLite cannot take, a bug): each op
        alone, in one transaction; each op refused is said in one line, its frames spooled, and
        the database keeps the rest and the recording. False: the store itself failed."""
        refused = []
        try:
            with store.write_transaction(self.conn):
                for op in ops:
                    try:
                        apply(self.conn, [op])
                    except Exception as exc:  # noqa: BLE001
                        if _store_failed(exc):
                            raise
                        refused.append((op, exc))
        except Exception as exc:  # noqa: BLE001
            if _store_failed(exc):
                return False
            raise
        for op, exc in refused:
            what = f"the {op.kind} row of session {_session_of(op)}"
            self._warn(f"cannot store {what} ({type(exc).__name__}: {exc})"
                       + ("; its frame goes to a spool file beside the database" if op.__class__ is FrameOp else
                          "; the rest is stored"))
        self._spill([op for op, _ in refused if op.__class__ is FrameOp])  # a refused exchange row is said, not spooled
        return True

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            self.conn = None
        for row in self._open_exchanges.values():  # never ended: kept as they stand
            spool = self._spool(row.get("session_id"))
            if spool is not None:
                spool.exchanges([row])
        self._open_exchanges.clear()
        for spool in self._spools.values():
            spool.end(spool.session.get("ended_at"), None)

    def _spill(self, ops: list[Op]) -> None:
        for op in ops:
            if op.__class__ is FrameOp:
                row = op.row
                spool = self._spool(row[0])
                if spool is not None:
                    spool.write([row], [])  # an HTTP frame's line names its exchange and SSE event id
            elif op.__class__ is ExchangeOp:
                self._spill_exchange(op.row)
            elif op.__class__ is EndOp:
                spool = self._spool(op.session_id)
                if spool is not None:
                    spool.session = dict(spool.session, ended_at=op.ended_at)

    def _spill_exchange(self, row: dict) -> None:
        """An exchange's row (its columns so far: an exchange is stored as it begins and updated
        as it ends) into its session's spool once, when it has ended or the recording closes; only
        the exchanges still open are held."""
        merged = self._open_exchanges.pop(row.get("id"), {})
        merged.update({k: v for k, v in row.items() if v is not None or k not in merged})
        if merged.get("ended_at") is None:
            self._open_exchanges[merged.get("id")] = merged
            return
        spool = self._spool(merged.get("session_id"))
        if spool is not None:
            spool.exchanges([merged])

    def _spool(self, session_id: str) -> Spool | None:
        spool = self._spools.get(session_id)
        if spool is None and session_id in self._sessions:
            spool = self._spools[session_id] = Spool(self.db_path, self._sessions[session_id], self._warn)
            if spool.path is not None:
                self._warn(f"session {session_id} continues in {spool.path}")
        return spool


class Journal(Collector):
    """A Collector whose ops a thread of this process writes to a Sink every FLUSH_INTERVAL_S,
    after `transform` (which turns stream chunks into frames, addons/http/recorder.py)."""

    def __init__(self, db_path: str, *, warn: Callable[[str], None] = warn_stderr,
                 transform: Callable[[list[Op]], list[Op]] | None = None, redactor=None):
        self.db_path = db_path
        self.ops: deque[Op] = deque()  # append and popleft are atomic: no lock on the event loop
        self._transform = transform
        self._warn = warn
        self._wake = threading.Event()
        self._closing = False
        self.sink = Sink(db_path, warn=warn, redactor=redactor)
        self._thread = threading.Thread(target=self._run, name="mcptap-journal", daemon=True)
        self._thread.start()

    def frame(self, row: tuple) -> None:
        self.ops.append(FrameOp(row))
        if len(self.ops) > 2000:
            self._wake.set()

    def close(self) -> None:
        """Write what is left and stop the thread."""
        self._closing = True
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_INTERVAL_S)
            self._wake.clear()
            closing = self._closing
            ops = [self.ops.popleft() for _ in range(len(self.ops))]
            if ops:
                try:
                    ops = self._transform(ops) if self._transform else ops
                except Exception as exc:  # noqa: BLE001 - the thread must go on (the transform guards its ops)
                    self._warn(f"cannot cut a batch into frames ({type(exc).__name__}: {exc}); "
                               "its frames already cut go on")
                    ops = [op for op in ops if not isinstance(op, STREAM_OPS)]
                self.sink.write(ops)
            if closing:
                break
        self.sink.close()


def _store_failed(exc: BaseException) -> bool:
    """Whether `exc` says the database or its disk failed (locked, full, corrupt, gone), not that
    it refused one row (a value it cannot bind, a constraint, text it cannot encode)."""
    return isinstance(exc, (sqlite3.OperationalError, sqlite3.InternalError, OSError)) or type(exc) is sqlite3.DatabaseError


def _session_of(op: Op) -> str:
    if op.__class__ is EndOp:
        return ascii(op.session_id)
    row = op.row
    return ascii(row.get("session_id") or row.get("id") if isinstance(row, dict) else row[0] if row else row)


def number(ops: list[Op], last_seq: dict[str, int]) -> list[Op]:
    """Each frame gets its session's next seq, in timestamp order within `ops` (a request hook
    and a stream tap can report frames a moment out of order; equal times keep their order).
    Sessions come first, then frames, then exchanges and ends."""
    frames = sorted((op.row for op in ops if op.__class__ is FrameOp), key=lambda row: row[2])
    numbered: list[Op] = []
    for row in frames:
        seq = last_seq[row[0]] = last_seq.get(row[0], 0) + 1
        numbered.append(FrameOp((row[0], seq) + row[2:]))
    return ([op for op in ops if op.__class__ is SessionOp] + numbered
            + [op for op in ops if isinstance(op, (ExchangeOp, EndOp))])


def redact(ops: list[Op], redactor) -> list[Op]:
    """Frames with their credential members replaced (analyzer/redaction/frames.py FrameRedactor), before
    they are stored or spooled; None: nothing is redacted."""
    if redactor is None:
        return ops
    return [FrameOp(store.redact_row(op.row, redactor)) if op.__class__ is FrameOp else op for op in ops]


def apply(conn: sqlite3.Connection, ops: list[Op]) -> None:
    """Numbered ops as SQL, inside the caller's transaction."""
    for op in ops:
        if op.__class__ is SessionOp:
            store.insert_session(conn, op.row, or_ignore=op.again)
    store.insert_http_frames(conn, [op.row for op in ops if op.__class__ is FrameOp])
    for op in ops:
        if op.__class__ is ExchangeOp:
            store.upsert_exchange(conn, op.row)
        elif op.__class__ is EndOp:
            store.end_session(conn, op.session_id, op.ended_at, None)
