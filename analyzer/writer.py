"""Batched writes of one live session into SQLite, off the forwarding path, with bounded memory.

A recorder hands over frames with `add()`, which never blocks on the database. A thread of this
writer commits what has gathered every FLUSH_INTERVAL_S, in one transaction. When the database
cannot be opened, stays locked past its busy timeout, fails, or falls MAX_PENDING_BYTES behind,
the rest of the session goes to a spool file (frame-log JSONL, see framelog.py) beside the
database, a one-line warning goes to stderr, and `mcptap import` of the spool later brings every
frame in. Nothing is dropped silently: if even the spool cannot be written, that is said too."""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence

from analyzer import framelog, store
from analyzer.store import FrameRow, StderrRow

FLUSH_INTERVAL_S = 0.05
"""How often gathered frames are committed: the most a kill -9 of the recorder can lose."""

MAX_PENDING_BYTES = 32 << 20
"""Bytes waiting for the database before the writer gives up on it and spools instead."""


def warn_stderr(message: str) -> None:
    try:
        sys.stderr.write(f"mcptap: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Spool:
    """An append-only frame-log file holding what the database could not take."""

    def __init__(self, db_path: str, session: dict, warn: Callable[[str], None]):
        self.session = session
        self._warn = warn
        self._lock = threading.Lock()
        self.path, self._fh = self._open(db_path, session["id"])
        self.lost = 0
        self._write_lines([framelog.dumps(framelog.session_record(session, spool=True))])

    @staticmethod
    def _open(db_path: str, session_id: str):
        name = f"{os.path.basename(db_path) or 'mcptap.db'}.{session_id}.spool.jsonl"
        for folder in (os.path.dirname(os.path.abspath(db_path)), tempfile.gettempdir()):
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                return path, os.fdopen(fd, "w", encoding="utf-8")
            except OSError:
                continue
        return None, None

    def _write_lines(self, lines: list[str]) -> None:
        with self._lock:
            if self._fh is None:
                self.lost += len(lines)
                return
            try:
                self._fh.write("".join(line + "\n" for line in lines))
                self._fh.flush()
            except (OSError, ValueError) as exc:
                self._fh = None
                self.lost += len(lines)
                self._warn(f"cannot write the spool {self.path} ({exc}); frames of session "
                           f"{self.session['id']} are being lost from here on")

    def write(self, frames: Sequence[FrameRow], stderr: Sequence[StderrRow]) -> None:
        sid = self.session["id"]
        lines = [framelog.dumps(framelog.frame_record(sid, seq, ts, d, raw, bool(inc)))
                 for seq, ts, d, raw, inc in frames]
        lines += [framelog.dumps(framelog.stderr_record(sid, seq, ts, raw, bool(inc)))
                  for seq, ts, raw, inc in stderr]
        if lines:
            self._write_lines(lines)

    def end(self, ended_at: float | None, exit_status: int | None) -> None:
        row = dict(self.session, ended_at=ended_at, exit_status=exit_status)
        self._write_lines([framelog.dumps(framelog.session_record(row, spool=True))])
        with self._lock:
            if self._fh is not None:
                try:
                    self._fh.close()
                except OSError:
                    pass
                self._fh = None


class SessionWriter:
    """Writes one session: `start()`, `add()` from one recorder thread, then `close()`."""

    def __init__(self, db_path: str, session: dict, *, warn: Callable[[str], None] = warn_stderr,
                 busy_timeout: float = store.BUSY_TIMEOUT_S, max_pending_bytes: int = MAX_PENDING_BYTES,
                 flush_interval: float = FLUSH_INTERVAL_S):
        self.db_path = db_path
        self.session = session
        self._warn = warn
        self._busy_timeout = busy_timeout
        self._max_pending = max_pending_bytes
        self._flush_interval = flush_interval
        self._lock = threading.Lock()
        self._frames: list[FrameRow] = []
        self._stderr: list[StderrRow] = []
        self._pending_bytes = 0
        self.spool: Spool | None = None
        self._closing = threading.Event()
        self._end: tuple[float | None, int | None] = (None, None)
        self._thread = threading.Thread(target=self._run, name="mcptap-db-writer", daemon=True)
        self.frames_committed = 0

    def start(self) -> None:
        self._thread.start()

    # -- recorder side ---------------------------------------------------------------------

    def add(self, frames: list[FrameRow], stderr: list[StderrRow]) -> None:
        size = sum(len(f[3]) for f in frames) + sum(len(s[2]) for s in stderr)
        with self._lock:
            if self.spool is None:
                has_pending = bool(self._frames or self._stderr)
                if not has_pending or self._pending_bytes + size <= self._max_pending:
                    self._frames.extend(frames)
                    self._stderr.extend(stderr)
                    self._pending_bytes += size
                    return
                self._start_spool(f"it fell {self._pending_bytes >> 20} MiB behind")
            spool = self.spool
        spool.write(frames, stderr)

    def close(self, ended_at: float | None, exit_status: int | None) -> None:
        """Flush everything, record the end, and wait for the writer thread (bounded by the busy
        timeout: a database that stays locked sends the rest to the spool)."""
        self._end = (ended_at, exit_status)
        self._closing.set()
        self._thread.join()

    # -- writer thread ---------------------------------------------------------------------

    def _start_spool(self, reason: str, *carry: tuple[Sequence[FrameRow], Sequence[StderrRow]]) -> None:
        """Switch to the spool for the rest of the session (call with the lock held). What was
        pending, and `carry` (a batch the database refused), go first."""
        if self.spool is not None:
            for frames, stderr in carry:
                self.spool.write(frames, stderr)
            return
        spool = Spool(self.db_path, self.session, self._warn)
        for frames, stderr in (*carry, (self._frames, self._stderr)):
            spool.write(frames, stderr)
        self._frames, self._stderr, self._pending_bytes = [], [], 0
        self.spool = spool
        if spool.path is None:
            self._warn(f"cannot record into {self.db_path} ({reason}) and cannot create a spool file "
                       f"there or in {tempfile.gettempdir()}: frames of session {self.session['id']} are being lost")
        else:
            self._warn(f"cannot record into {self.db_path} ({reason}); session {self.session['id']} goes "
                       f"to {spool.path}; bring it in later with: mcptap import --db {self.db_path} {spool.path}")

    def _run(self) -> None:
        try:
            conn = store.connect(self.db_path, busy_timeout=self._busy_timeout)
            conn.execute("BEGIN IMMEDIATE")
            store.insert_session(conn, self.session)
            conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            with self._lock:
                self._start_spool(_reason(exc))
            self._finish(None)
            return
        try:
            self._loop(conn)
        finally:
            self._finish(conn)

    def _loop(self, conn: sqlite3.Connection) -> None:
        while True:
            closing = self._closing.wait(self._flush_interval)
            with self._lock:
                if self.spool is not None:
                    return
                frames, stderr = self._frames, self._stderr
                self._frames, self._stderr, self._pending_bytes = [], [], 0
            if frames or stderr:
                try:
                    store.append(conn, self.session["id"], frames, stderr)
                    self.frames_committed += len(frames)
                except sqlite3.Error as exc:
                    with self._lock:
                        self._start_spool(_reason(exc), (frames, stderr))
                    return
            if closing:
                with self._lock:
                    if not (self._frames or self._stderr):
                        return

    def _finish(self, conn: sqlite3.Connection | None) -> None:
        if conn is not None and self.spool is None:
            try:
                self._closing.wait()
                store.end_session(conn, self.session["id"], *self._end)
                conn.close()
                return
            except sqlite3.Error as exc:
                with self._lock:
                    self._start_spool(_reason(exc))
        self._closing.wait()
        with self._lock:  # frames that arrived after the switch went straight to the spool
            if self._frames or self._stderr:
                self.spool.write(self._frames, self._stderr)
                self._frames, self._stderr = [], []
        self.spool.end(*self._end)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    return text
