"""The live viewer's reads (`mcptap view`, analyzer/report/live.py): a read-only connection, each
session's frame count and time span, a page of a session's frames with their own `messages` row,
a session's frames in a time window (or how many fall in each slice of it) and its longest idle
gaps, findings of some frames, one frame whole with its HTTP exchange, and the marker that tells another connection's commit."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Sequence

from mcptap.store.connections import has_table, open_existing, readonly_uri
from mcptap.store.queries import frame_columns

ROW_COLUMNS = ("seq", "ts", "direction", "size", "exchange_id", "kind", "id", "method", "paired_frame", "latency_s",
               "pair_ts", "blob", "head")
"""What `page`, `by_seq` and `in_time` give of each frame, in this order; `head` is the first
HEAD_CHARS of the frame's bytes where it has no `messages` row (not analysed yet), else None."""
HEAD_CHARS = 65_536


def connect_readonly(path: str) -> sqlite3.Connection:
    """The database at `path` (checked as open_existing checks it) opened read-only (mode=ro): the
    viewer can change nothing in it, and sees what writers commit."""
    open_existing(path).close()
    return sqlite3.connect(readonly_uri(path), uri=True, isolation_level=None, check_same_thread=False)


def data_version(conn: sqlite3.Connection) -> tuple:
    """What changes when a recorder or an analysis stores more (the same on every connection):
    the sessions' count and their last end, the frames' last rowid, the analyses' last rowid."""
    analysed = conn.execute("SELECT max(rowid) FROM analyses").fetchone()[0] if has_table(conn, "analyses") else None
    return (*conn.execute("SELECT count(*), max(ended_at) FROM sessions").fetchone(),
            conn.execute("SELECT max(rowid) FROM frames").fetchone()[0], analysed)


def sessions(conn: sqlite3.Connection) -> list[dict]:
    """Every session in start order (id as tie-break, the order display filters give frames in)
    with its frames: count, first and last seq, and the times of those two frames (read through
    the primary key: a million frames are not read for them)."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT s.id, s.label, s.transport, s.started_at, s.ended_at, c.frames, c.first_seq, c.last_seq, "
            "(SELECT ts FROM frames WHERE session_id = s.id AND seq = c.first_seq) AS first_ts, "
            "(SELECT ts FROM frames WHERE session_id = s.id AND seq = c.last_seq) AS last_ts "
            "FROM sessions s LEFT JOIN (SELECT session_id, count(*) AS frames, min(seq) AS first_seq, "
            "max(seq) AS last_seq FROM frames GROUP BY session_id) c ON c.session_id = s.id "
            "ORDER BY s.started_at, s.id").fetchall()
    finally:
        conn.row_factory = None
    return [dict(r) for r in rows]


def analysis_counts(conn: sqlite3.Connection) -> dict[str, tuple]:
    """{session id: (revision, errors, warnings, infos)} of the analysed sessions."""
    if not has_table(conn, "analyses"):
        return {}
    return {r[0]: r[1:] for r in conn.execute("SELECT session_id, revision, errors, warnings, infos FROM analyses")}


def findings_by_code(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
    """(severity, code, count) of every finding code stored."""
    if not has_table(conn, "findings"):
        return []
    return conn.execute("SELECT severity, code, count(*) FROM findings GROUP BY severity, code").fetchall()


def findings_with_codes(conn: sqlite3.Connection, codes: Sequence[str], limit: int) -> tuple[list[tuple], int]:
    """(session id, session label, frame seq, code, severity, message) of the first `limit` findings
    of these codes, in the sessions' start order then the frames', and how many there are in all."""
    if not has_table(conn, "findings") or not codes:
        return [], 0
    marks = ", ".join("?" * len(codes))
    total = conn.execute(f"SELECT count(*) FROM findings WHERE code IN ({marks})", tuple(codes)).fetchone()[0]
    rows = conn.execute(
        "SELECT g.session_id, s.label, g.frame_seq, g.code, g.severity, g.message FROM findings g "
        f"LEFT JOIN sessions s ON s.id = g.session_id WHERE g.code IN ({marks}) "
        "ORDER BY s.started_at, g.session_id, g.frame_seq, g.rowid LIMIT ?", (*codes, limit)).fetchall()
    return rows, total


def _select(conn: sqlite3.Connection) -> str:
    have = frame_columns(conn)
    exchange = "f.exchange_id" if "exchange_id" in have else "NULL"
    if has_table(conn, "messages"):
        return (f"SELECT f.seq, f.ts, f.direction, f.size, {exchange}, m.kind, m.id, m.method, m.paired_frame, "
                "m.latency_s, (SELECT p.ts FROM frames p WHERE p.session_id = f.session_id AND p.seq = m.paired_frame), "
                "typeof(f.raw) = 'blob', CASE WHEN m.kind IS NULL THEN substr(f.raw, 1, ?) END FROM frames f "
                "LEFT JOIN messages m ON m.session_id = f.session_id AND m.frame_seq = f.seq AND m.idx IS NULL ")
    return (f"SELECT f.seq, f.ts, f.direction, f.size, {exchange}, NULL, NULL, NULL, NULL, NULL, NULL, "
            "typeof(f.raw) = 'blob', substr(f.raw, 1, ?) FROM frames f ")


def page(conn: sqlite3.Connection, session_id: str, offset: int, limit: int) -> list[tuple]:
    """The session's frames from the `offset`-th (0-based, seq order), at most `limit` (ROW_COLUMNS)."""
    return conn.execute(_select(conn) + "WHERE f.session_id = ? ORDER BY f.seq LIMIT ? OFFSET ?",
                        (HEAD_CHARS, session_id, limit, offset)).fetchall()


def by_seq(conn: sqlite3.Connection, session_id: str, seqs: Sequence[int]) -> list[tuple]:
    """These frames of the session (ROW_COLUMNS), in seq order."""
    out: list[tuple] = []
    for start in range(0, len(seqs), 500):
        chunk = list(seqs[start:start + 500])
        out += conn.execute(_select(conn) + f"WHERE f.session_id = ? AND f.seq IN ({', '.join('?' * len(chunk))}) "
                            "ORDER BY f.seq", (HEAD_CHARS, session_id, *chunk)).fetchall()
    return out


def position(conn: sqlite3.Connection, session_id: str, seq: int) -> int:
    """How many of the session's frames come before seq."""
    return conn.execute("SELECT count(*) FROM frames WHERE session_id = ? AND seq < ?", (session_id, seq)).fetchone()[0]


def seqs_in_time(conn: sqlite3.Connection, session_id: str, start: float, end: float) -> list[int]:
    """The seqs of the session's frames with start <= ts <= end, in seq order."""
    return [r[0] for r in conn.execute("SELECT seq FROM frames WHERE session_id = ? AND ts BETWEEN ? AND ? ORDER BY seq",
                                       (session_id, start, end))]


def time_histogram(conn: sqlite3.Connection, session_id: str, start: float, end: float, buckets: int) -> list[int]:
    """How many of the session's frames fall in each of `buckets` equal slices of start <= ts <= end."""
    counts = [0] * buckets
    width = (end - start) / buckets
    if not width > 0:
        return counts
    for b, n in conn.execute("SELECT min(?, CAST((ts - ?) / ? AS INTEGER)), count(*) FROM frames "
                             "WHERE session_id = ? AND ts BETWEEN ? AND ? GROUP BY 1",
                             (buckets - 1, start, width, session_id, start, end)):
        counts[max(0, b)] += n
    return counts


def idle_gaps(conn: sqlite3.Connection, session_id: str, limit: int) -> list[tuple[float, float]]:
    """The `limit` longest stretches without a frame between consecutive frames (in seq order) of
    the session, as (ts before, ts after), longest first."""
    longest: list[tuple[float, float, float]] = []
    before = None
    for (ts,) in conn.execute("SELECT ts FROM frames WHERE session_id = ? ORDER BY seq", (session_id,)):
        if before is not None and ts > before:
            if len(longest) < limit:
                heapq.heappush(longest, (ts - before, before, ts))
            elif ts - before > longest[0][0]:
                heapq.heapreplace(longest, (ts - before, before, ts))
        before = ts
    return [(a, b) for _, a, b in sorted(longest, reverse=True)]


def findings_of(conn: sqlite3.Connection, session_id: str, seqs: Sequence[int]) -> list[tuple]:
    """(frame seq, element idx, code, severity, message, related frame) of these frames' findings."""
    if not has_table(conn, "findings") or not seqs:
        return []
    out: list[tuple] = []
    for start in range(0, len(seqs), 500):
        chunk = list(seqs[start:start + 500])
        out += conn.execute("SELECT frame_seq, idx, code, severity, message, related_frame FROM findings WHERE "
                            f"session_id = ? AND frame_seq IN ({', '.join('?' * len(chunk))}) ORDER BY frame_seq, rowid",
                            (session_id, *chunk)).fetchall()
    return out


def frame_bytes(conn: sqlite3.Connection, session_id: str, seq: int, cut: int) -> tuple | None:
    """(the first `cut` characters of the frame's bytes, or bytes when a BLOB; its size) or None."""
    return conn.execute("SELECT substr(raw, 1, ?), size FROM frames WHERE session_id = ? AND seq = ?",
                        (cut, session_id, seq)).fetchone()


def exchange(conn: sqlite3.Connection, exchange_id: str) -> dict | None:
    """The HTTP exchange's row."""
    if not has_table(conn, "exchanges"):
        return None
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM exchanges WHERE id = ?", (exchange_id,)).fetchone()
    finally:
        conn.row_factory = None
    return dict(row) if row is not None else None


def stderr_lines(conn: sqlite3.Connection, session_id: str, limit: int, cut: int) -> list[tuple[float, bytes, int]]:
    """(ts, the first `cut` bytes of raw, raw's size in bytes) of the session's first `limit` stderr
    lines, in time order."""
    if not has_table(conn, "stderr_lines"):
        return []
    return conn.execute("SELECT ts, substr(CAST(raw AS BLOB), 1, ?), length(CAST(raw AS BLOB)) FROM stderr_lines "
                        "WHERE session_id = ? ORDER BY ts, seq LIMIT ?", (cut, session_id, limit)).fetchall()
