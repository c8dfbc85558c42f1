"""The per-session state of an import (analyzer/readers/importer.py) that is not in memory: a session
no line has named for a while is finished (its rows written, its row completed) and its state
set aside in a private temporary SQLite file, from which it is taken back if a later line names
it again, and from which the import's result is read, session by session. So an import of a
million one-frame sessions holds the sessions of the last batch or two, not a million. And what
an import gives back, session by session (`ImportedSession`, `FrameLines`), whichever reader
made it (analyzer/readers/importer.py, http_capture.py)."""

from __future__ import annotations

import json
import sqlite3
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

@dataclass
class FrameLines:
    """Where a session's frames were in the file it was imported from: the seq the import gave
    each frame (`_Target.frame_seq`, the one rule) and its line, in file order."""

    seqs: array = field(default_factory=lambda: array("q"))
    lines: array = field(default_factory=lambda: array("q"))

    def of(self, seqs: Iterable[int]) -> dict[int, int]:
        """The line of each of these seqs that a frame of the file had (the first, if several)."""
        wanted, found = set(seqs), {}
        if wanted:
            for seq, line in zip(self.seqs, self.lines):
                if seq in wanted and seq not in found:
                    found[seq] = line
        return found


@dataclass
class ImportedSession:
    id: str
    name: str
    frames: int = 0
    stderr_lines: int = 0
    merged: bool = False  # a spool merged into a session the database already had
    lines: FrameLines | None = None  # with import_file(locate=True)


FILTER_BITS = 1 << 24
"""Bits of the filter that says, without a query, that a name was never set aside (2 MiB)."""


class SetAside:
    """Session states by name, on disk. `state` is the tuple `importer._Target.state()` gives."""

    COLUMNS = ("name", "ord", "id", "frames", "stderr_lines", "merged", "or_ignore", "next_seq", "next_err_seq",
               "first_ts", "fields", "before_frames", "before_stderr")

    def __init__(self):
        self._db = sqlite3.connect("", isolation_level=None)  # "": a private temporary file
        self._finalizer = weakref.finalize(self, self._db.close)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(f"CREATE TABLE s ({', '.join(self.COLUMNS)}, PRIMARY KEY (name)) WITHOUT ROWID")
        self._db.execute("CREATE UNIQUE INDEX s_ord ON s (ord)")
        self._bits: bytearray | None = None  # made by the first `put`: an import that sets nothing aside pays nothing
        self._pending: list[tuple] = []
        self.count = 0

    def _bit(self, name: str) -> tuple[int, int]:
        h = hash(name) % FILTER_BITS
        return h >> 3, 1 << (h & 7)

    def put(self, state: tuple) -> None:
        """Set a session's state aside (written with the next `flush`)."""
        if self._bits is None:
            self._bits = bytearray(FILTER_BITS // 8)
        i, bit = self._bit(state[0])
        self._bits[i] |= bit
        self._pending.append((*state[:10], json.dumps(state[10]), *state[11:]))

    def flush(self) -> None:
        if self._pending:
            self._db.executemany(f"INSERT OR REPLACE INTO s VALUES ({', '.join('?' * len(self.COLUMNS))})",
                                 self._pending)
            self._pending = []

    def take(self, name: str) -> tuple | None:
        """A session's state set aside, removed from here; None if it never was."""
        if self._bits is None:
            return None
        i, bit = self._bit(name)
        if not self._bits[i] & bit:
            return None
        self.flush()
        row = self._db.execute("SELECT * FROM s WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        self._db.execute("DELETE FROM s WHERE name = ?", (name,))
        return (*row[:10], json.loads(row[10]), *row[11:])

    def update_counts(self, counts: Iterator[tuple[str, int, int]]) -> None:
        """(id, frames, stderr_lines) for sessions whose counts are known only once committed."""
        self.flush()
        self._db.executemany("UPDATE s SET frames = ?, stderr_lines = ? WHERE id = ?",
                             ((f, e, sid) for sid, f, e in counts))

    def spooled(self) -> list[tuple[str, int, int]]:
        """(id, stored frames before, stored stderr lines before) of the `or_ignore` sessions."""
        self.flush()
        return self._db.execute("SELECT id, before_frames, before_stderr FROM s WHERE or_ignore").fetchall()

    def results(self, make) -> "Results":
        self.flush()
        return Results(self, make)

    def rows(self, start: int = 0) -> Iterator[tuple]:
        """(id, name, frames, stderr_lines, merged) in the order the sessions first came."""
        cursor = self._db.execute("SELECT id, name, frames, stderr_lines, merged FROM s WHERE ord >= ? ORDER BY ord",
                                  (start,))
        while chunk := cursor.fetchmany(1000):
            yield from chunk

    def row(self, order: int) -> tuple:
        return self._db.execute("SELECT id, name, frames, stderr_lines, merged FROM s WHERE ord = ?",
                                (order,)).fetchone()

    def __len__(self) -> int:
        self.flush()
        return self._db.execute("SELECT count(*) FROM s").fetchone()[0]


class Results(Sequence):
    """An import's sessions (ImportedSession, built as they are read), in the order they first
    came in the file, read from the SetAside they were put in."""

    def __init__(self, aside: SetAside, make):
        self._aside, self._make, self._len = aside, make, len(aside)

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        return (self._make(*row) for row in self._aside.rows())

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            rows = self._aside.rows(start)
            return [self._make(*row) for row, _ in zip(rows, range(start, stop))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        return self._make(*self._aside.row(index))
