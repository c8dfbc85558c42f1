"""Writes a live HTTP capture into SQLite off the proxy's event loop: many sessions at once,
discovered as they start, with their frames and exchanges.

The capture calls `session()`, `frame()`, `exchange()` and `end()` from its event loop; each
only appends to a list (no lock is taken that a database write holds). A thread commits what
has gathered every FLUSH_INTERVAL_S in one transaction, in the order it was given. If the
database fails, the frames of each session go on into a spool file beside it (frame-log JSONL,
as the stdio writer does), a one-line warning says where, and `mcptap import` brings them in
later: nothing is dropped silently."""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable

from analyzer import store
from analyzer.writer import FLUSH_INTERVAL_S, Spool, warn_stderr


class Collector:
    """The same calls as a Journal, kept in memory: an import writes them in its own transaction
    (`number`, then `apply`)."""

    def __init__(self) -> None:
        self.ops: list[tuple] | deque[tuple] = []
        self.db_path = ""

    def session(self, session: dict) -> None:
        self.ops.append(("session", session))

    def frame(self, row: tuple) -> None:
        self.ops.append(("frame", row))

    def exchange(self, snapshot: dict) -> None:
        self.ops.append(("exchange", snapshot))

    def end(self, session_id: str, ended_at: float | None) -> None:
        self.ops.append(("end", session_id, ended_at))

    def close(self) -> None:
        pass


class Journal(Collector):
    def __init__(self, db_path: str, *, warn: Callable[[str], None] = warn_stderr):
        self.db_path = db_path
        self._warn = warn
        self.ops: deque[tuple] = deque()  # append and popleft are atomic: no lock on the event loop
        self._wake = threading.Event()
        self._closing = False
        self._sessions: dict[str, dict] = {}
        self._spools: dict[str, Spool] = {}
        self._failed: str | None = None
        self._seq: dict[str, int] = {}  # last seq given, per session
        self.conn = store.connect(db_path)  # opened here: a bad path is an error at start, not later
        self._thread = threading.Thread(target=self._run, name="mcptap-journal", daemon=True)
        self._thread.start()

    # -- from the capture (event loop): session(), frame(), exchange(), end() as Collector's ----

    def session(self, session: dict) -> None:
        self._sessions[session["id"]] = session  # for a spool, should the database fail
        super().session(session)

    def frame(self, row: tuple) -> None:
        self.ops.append(("frame", row))
        if len(self.ops) > 2000:
            self._wake.set()

    def close(self) -> None:
        """Write what is left and stop the thread."""
        self._closing = True
        self._wake.set()
        self._thread.join()

    # -- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_INTERVAL_S)
            self._wake.clear()
            closing = self._closing
            ops = [self.ops.popleft() for _ in range(len(self.ops))]
            if ops:
                self._write(ops)
            if closing:
                break
        if self.conn is not None:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
        for spool in self._spools.values():
            spool.end(None, None)

    def _write(self, ops: list[tuple]) -> None:
        ops = number(ops, self._seq)
        if self.conn is not None:
            try:
                with store.write_transaction(self.conn):
                    apply(self.conn, ops)
                return
            except (sqlite3.Error, OSError) as exc:
                self._failed = str(exc) or type(exc).__name__
                try:
                    self.conn.close()
                except sqlite3.Error:
                    pass
                self.conn = None
                self._warn(f"cannot write to {self.db_path} ({self._failed}); frames go to spool files beside it "
                           "(mcptap import brings them in)")
        self._spill(ops)

    def _spill(self, ops: list[tuple]) -> None:
        for op in ops:
            if op[0] == "frame":
                row = op[1]
                spool = self._spool(row[0])
                if spool is not None:
                    spool.write([row[:7]], [])
            elif op[0] == "end":
                spool = self._spool(op[1])
                if spool is not None:
                    spool.session = dict(spool.session, ended_at=op[2])

    def _spool(self, session_id: str) -> Spool | None:
        spool = self._spools.get(session_id)
        if spool is None and session_id in self._sessions:
            spool = self._spools[session_id] = Spool(self.db_path, self._sessions[session_id], self._warn)
            if spool.path is not None:
                self._warn(f"session {session_id} continues in {spool.path}")
        return spool


def number(ops: list[tuple], last_seq: dict[str, int]) -> list[tuple]:
    """Each frame gets its session's next seq, in timestamp order within `ops` (a request hook
    and a stream tap can report frames a moment out of order; equal times keep their order).
    Sessions come first, then frames, then exchanges and ends."""
    frames = sorted((op[1] for op in ops if op[0] == "frame"), key=lambda row: row[2])
    numbered = []
    for row in frames:
        seq = last_seq[row[0]] = last_seq.get(row[0], 0) + 1
        numbered.append(("frame", (row[0], seq) + row[2:]))
    return [op for op in ops if op[0] == "session"] + numbered + [op for op in ops if op[0] in ("exchange", "end")]


def apply(conn: sqlite3.Connection, ops: list[tuple]) -> None:
    """Numbered ops as SQL, inside the caller's transaction."""
    for op in ops:
        if op[0] == "session":
            store.insert_session(conn, op[1])
    store.insert_http_frames(conn, [op[1] for op in ops if op[0] == "frame"])
    for op in ops:
        if op[0] == "exchange":
            store.upsert_exchange(conn, op[1])
        elif op[0] == "end":
            store.end_session(conn, op[1], op[2], None)
