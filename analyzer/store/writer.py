"""Batched writes of one live session into SQLite, off the forwarding path, with bounded memory.

A recorder hands over rows in their final form with `add()`, which never waits for the database.
A thread of this writer commits what has gathered every FLUSH_INTERVAL_S, in one transaction.
`Backlog` counts the bytes of frames added but in neither the database nor a spool; the recorder
calls `Backlog.wait_for_room()` before it cuts more frames, so memory stays bounded (the capture
keeps what waits behind that in its own queue, addons/shipping/chunkqueue.py, never pacing the wire). When the
database cannot be opened, stays locked past its busy timeout, fails, or makes no room for
STALL_S, or the store cannot even be imported or used (a broken environment: any exception
from it counts), the rest of the session goes to a spool file (frame-log JSONL, framelog.py) beside the
database, a one-line warning goes to stderr, and `mcptap import` of the spool later brings every
frame in. Nothing is dropped silently: if even the spool cannot be written, that is said too."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Sequence

from mcptap import store

from mcptap.wire import framelog
from mcptap.wire.exchangelog import exchange_record
from mcptap.errors import warn_stderr
from mcptap.store import FrameDbRow, StderrDbRow

FLUSH_INTERVAL_S = 0.05
"""How often gathered frames are committed: the most a kill -9 of the recorder can lose."""

HIGH_WATER_BYTES = 8 << 20
"""Bytes of frames waiting for the database at which the recorder stops cutting more frames."""

LOW_WATER_BYTES = 4 << 20
"""Bytes of frames waiting below which a waiting recorder goes on."""

STALL_S = 2 * store.BUSY_TIMEOUT_S
"""How long the recorder waits for the database to make room before the session goes to the
spool: longer than the busy timeout, so that a lock is reported as the lock it is."""


class Backlog:
    """Bytes of frames handed to the writer and not yet committed or spooled. The recorder waits
    for room before it cuts more frames (`wait_for_room`), so the writer's memory stays bounded.
    `added()` is called by the one thread that adds, `stored()` by whichever thread stores."""

    def __init__(self, high: int = HIGH_WATER_BYTES, low: int = LOW_WATER_BYTES):
        self._high, self._low = high, low
        self._added = 0
        self._stored = 0
        self._lock = threading.Lock()
        self._room = threading.Event()
        self._room.set()

    def added(self, nbytes: int) -> None:
        self._added += nbytes

    def stored(self, nbytes: int) -> None:
        with self._lock:
            self._stored += nbytes
        if self.pending() <= self._low:
            self._room.set()

    def pending(self) -> int:
        return self._added - self._stored

    def wait_for_room(self, timeout: float) -> bool:
        """True at once while below the high-water mark; else wait until the store is back under
        the low-water mark. False if it did not get there within `timeout`."""
        if self.pending() <= self._high:
            return True
        self._room.clear()
        if self.pending() <= self._low:  # stored between the check and the clear
            self._room.set()
            return True
        return self._room.wait(timeout)


class Spool:
    """An append-only frame-log file holding what the database could not take."""

    def __init__(self, db_path: str, session: dict, warn: Callable[[str], None]):
        self.session = session
        self._warn = warn
        self._lock = threading.Lock()
        self.lost = 0
        self.path, self._fh = self._open(db_path, framelog.dumps(framelog.session_record(session, spool=True)))

    def _open(self, db_path: str, first_line: str):
        """The spool beside the database, else in the temp folder: the first that takes its
        first line (a full disk lets a file be created and then refuses to write to it)."""
        name = f"{os.path.basename(db_path) or 'mcptap.db'}.{self.session['id']}.spool.jsonl"
        for folder in (os.path.dirname(os.path.abspath(db_path)), tempfile.gettempdir()):
            path = os.path.join(folder, name)
            fh = None
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                fh = os.fdopen(fd, "w", encoding="utf-8")
                fh.write(first_line + "\n")
                fh.flush()
                return path, fh
            except OSError:
                if fh is not None:
                    try:
                        fh.close()
                    except OSError:
                        pass
                    try:
                        if os.path.getsize(path) == 0:
                            os.unlink(path)
                    except OSError:
                        pass
                continue
        self.lost += 1
        return None, None

    def _write_lines(self, lines: list[str]) -> None:
        with self._lock:
            if self._fh is None:
                self.lost += len(lines)
                return
            try:
                self._fh.write("\n".join(lines) + "\n")
                self._fh.flush()
            except (OSError, ValueError) as exc:
                self._fh = None
                self.lost += len(lines)
                self._warn(f"cannot write the spool {self.path} ({exc}); frames of session "
                           f"{self.session['id']} are being lost from here on")

    def write(self, frames: Sequence[FrameDbRow], stderr: Sequence[StderrDbRow]) -> None:
        lines = [framelog.frame_line(r) for r in frames]
        lines += [framelog.stderr_line(r) for r in stderr]
        if lines:
            self._write_lines(lines)

    def exchanges(self, rows: Sequence[dict]) -> None:
        """Exchange records (an `exchanges` row each, its columns as stored), once each."""
        if rows:
            self._write_lines([framelog.dumps(exchange_record(self.session["id"], row)) for row in rows])

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
                 busy_timeout: float = store.BUSY_TIMEOUT_S, flush_interval: float = FLUSH_INTERVAL_S,
                 backlog: Backlog | None = None):
        self.db_path = db_path
        self.session = session
        self.backlog = backlog or Backlog()
        self._warn = warn
        self._busy_timeout = busy_timeout
        self._flush_interval = flush_interval
        self._lock = threading.Lock()
        self._frames: list[FrameDbRow] = []
        self._stderr: list[StderrDbRow] = []
        self._pending_bytes = 0
        self.spool: Spool | None = None
        self._closing = threading.Event()
        self._end: tuple[float | None, int | None] = (None, None)
        self._thread = threading.Thread(target=self._run, name="mcptap-db-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- recorder side ---------------------------------------------------------------------

    def add(self, frames: list[FrameDbRow], stderr: list[StderrDbRow], nbytes: int) -> None:
        """Rows to store; `nbytes` is what they took on the wire (for the backlog)."""
        self.backlog.added(nbytes)
        with self._lock:
            if self.spool is None:
                self._frames.extend(frames)
                self._stderr.extend(stderr)
                self._pending_bytes += nbytes
                return
            spool = self.spool
        spool.write(frames, stderr)
        self.backlog.stored(nbytes)

    def stalled(self) -> None:
        """The recorder waited STALL_S for room: give up on the database for this session."""
        with self._lock:
            self._start_spool(f"it made no room for {STALL_S:g} s")

    def close(self, ended_at: float | None, exit_status: int | None) -> None:
        """Flush everything, record the end, and wait for the writer thread (bounded by the busy
        timeout: a database that stays locked sends the rest to the spool)."""
        self._end = (ended_at, exit_status)
        self._closing.set()
        self._thread.join()

    # -- writer thread ---------------------------------------------------------------------

    def _start_spool(self, reason: str, *carry: tuple[Sequence[FrameDbRow], Sequence[StderrDbRow], int]) -> None:
        """Switch to the spool for the rest of the session (call with the lock held). `carry`
        (a batch the database refused) and what was pending go first."""
        fresh = self.spool is None
        if fresh:
            self.spool = Spool(self.db_path, self.session, self._warn)
        batches = (*carry, (self._frames, self._stderr, self._pending_bytes))
        self._frames, self._stderr, self._pending_bytes = [], [], 0
        for frames, stderr, nbytes in batches:
            self.spool.write(frames, stderr)
            self.backlog.stored(nbytes)
        if not fresh:
            return
        if self.spool.path is None:
            self._warn(f"cannot record into {self.db_path} ({reason}) and cannot create a spool file "
                       f"there or in {tempfile.gettempdir()}: frames of session {self.session['id']} are being lost")
        else:
            self._warn(f"cannot record into {self.db_path} ({reason}); session {self.session['id']} goes "
                       f"to {self.spool.path}; bring it in later with: mcptap import --db {self.db_path} {self.spool.path}")

    def _run(self) -> None:
        conn = None
        try:
            conn = store.connect(self.db_path, busy_timeout=self._busy_timeout)
            conn.execute("BEGIN IMMEDIATE")
            store.insert_session(conn, self.session)
            conn.execute("COMMIT")
        except Exception as exc:  # noqa: BLE001 - whatever keeps the store from working, the frames go on
            with self._lock:
                self._start_spool(_reason(exc))
        try:
            if self.spool is None:
                self._loop(conn)
        finally:
            self._finish(conn)

    def _loop(self, conn: sqlite3.Connection) -> None:
        while True:
            closing = self._closing.wait(self._flush_interval)
            with self._lock:
                if self.spool is not None:
                    return
                frames, stderr, nbytes = self._frames, self._stderr, self._pending_bytes
                self._frames, self._stderr, self._pending_bytes = [], [], 0
            if frames or stderr:
                try:
                    store.append_rows(conn, frames, stderr)
                except Exception as exc:  # noqa: BLE001 - the batch and the rest go to the spool
                    with self._lock:
                        self._start_spool(_reason(exc), (frames, stderr, nbytes))
                    return
                self.backlog.stored(nbytes)
            if closing:
                with self._lock:
                    if not (self._frames or self._stderr):
                        return

    def _finish(self, conn: sqlite3.Connection | None) -> None:
        self._closing.wait()
        if conn is not None and self.spool is None:
            try:
                store.end_session(conn, self.session["id"], *self._end)
                conn.close()
                return
            except Exception as exc:  # noqa: BLE001
                with self._lock:
                    self._start_spool(_reason(exc))
        with self._lock:  # rows that came in after the switch went straight to the spool
            self._start_spool("")
        self.spool.end(*self._end)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass


def _reason(exc: BaseException) -> str:
    """Why the store failed, in a few words: the database's own message, else the exception's
    type and message (an environment that lacks what the store needs, or a bug)."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    elif not isinstance(exc, (sqlite3.Error, OSError)):
        text = f"{type(exc).__name__}: {text}"
    return text
