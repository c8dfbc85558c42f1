"""The SQL that writes and reads the recorded tables (sessions, frames, stderr_lines, exchanges):
capture, import and redaction write them; analysis, export, replay and the reports read them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from mcptap.errors import SessionNotFound
from mcptap.store.rows import (EXCHANGE_COLUMNS, SESSION_COLUMNS, Frame, FrameDbRow, FrameRow, StderrDbRow, StderrLine,
                               StderrRow, frame_row, stderr_row, stored_raw)
from mcptap.store.connections import has_column, has_table, write_transaction


# -- writes -----------------------------------------------------------------------------------

def insert_session(conn: sqlite3.Connection, session: dict, *, or_ignore: bool = False) -> None:
    cols = [c for c in SESSION_COLUMNS if c in session]
    conn.execute(
        f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [session[c] for c in cols],
    )


_INSERT_FRAME = ("INSERT INTO frames (session_id, seq, ts, direction, raw, size, incomplete, redacted) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_STDERR = "INSERT INTO stderr_lines (session_id, seq, ts, raw, incomplete) VALUES (?, ?, ?, ?, ?)"


def append_rows(conn: sqlite3.Connection, frames: Sequence[FrameDbRow], stderr: Sequence[StderrDbRow]) -> None:
    """One transaction holding a batch of rows in their final form (the recorders' fast path)."""
    with write_transaction(conn):
        insert_rows(conn, frames, stderr)


def insert_rows(conn: sqlite3.Connection, frames: Sequence[FrameDbRow], stderr: Sequence[StderrDbRow], *,
                or_ignore: bool = False) -> None:
    """Rows in their final form, inside the caller's transaction (`or_ignore`: rows the database
    holds already are kept as they are, for a spool filling in its session)."""
    if frames:
        conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME, frames)
    if stderr:
        conn.executemany(_or_ignore(_INSERT_STDERR) if or_ignore else _INSERT_STDERR, stderr)


_INSERT_FRAME_TEXT = _INSERT_FRAME.replace("VALUES (?, ?, ?, ?, ?,", "VALUES (?, ?, ?, ?, CAST(? AS TEXT),")
"""A frame whose raw bytes are stored as TEXT (`stored_as_text`): SQLite takes the bytes as
they are, with no decoding in Python and no encoding again on the way in."""
assert _INSERT_FRAME_TEXT != _INSERT_FRAME


def insert_frame_bytes(conn: sqlite3.Connection, text_rows: Sequence[tuple], blob_rows: Sequence[tuple], *,
                       or_ignore: bool = False) -> None:
    """Frame rows (as FrameDbRow) whose raw is bytes, inside the caller's transaction (an
    import's fast path): `text_rows` stored as TEXT (their bytes must be `stored_as_text`),
    `blob_rows` as BLOB."""
    if text_rows:
        conn.executemany(_or_ignore(_INSERT_FRAME_TEXT) if or_ignore else _INSERT_FRAME_TEXT, text_rows)
    if blob_rows:
        conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME, blob_rows)


def _or_ignore(sql: str) -> str:
    return sql.replace("INSERT", "INSERT OR IGNORE", 1)


_INSERT_HTTP_FRAME = ("INSERT INTO frames (session_id, seq, ts, direction, raw, size, incomplete, exchange_id, event_id, "
                      "redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def insert_http_frames(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    conn.executemany(_INSERT_HTTP_FRAME, rows)


def upsert_exchange(conn: sqlite3.Connection, exchange: dict) -> None:
    """Insert an exchange, or update the columns given for one already stored."""
    cols = [c for c in EXCHANGE_COLUMNS if c in exchange]
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c != "id")
    conn.execute(
        f"INSERT INTO exchanges ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
        f"ON CONFLICT(id) DO UPDATE SET {updates}",
        [exchange[c] for c in cols],
    )


def insert_exchange(conn: sqlite3.Connection, exchange: dict) -> None:
    """A new exchange row (an import's): its id must not be stored yet."""
    cols = [c for c in EXCHANGE_COLUMNS if c in exchange]
    conn.execute(f"INSERT INTO exchanges ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                 [exchange[c] for c in cols])


def exchange_exists(conn: sqlite3.Connection, exchange_id: str) -> bool:
    return conn.execute("SELECT 1 FROM exchanges WHERE id = ?", (exchange_id,)).fetchone() is not None


def set_frame_refs(conn: sqlite3.Connection, rows: Sequence[tuple[str | None, str | None, str, int]]) -> None:
    """(exchange id, event id, session id, seq) of frames stored already: the HTTP exchange each
    crossed in and its SSE event id (an import's)."""
    conn.executemany("UPDATE frames SET exchange_id = ?, event_id = ? WHERE session_id = ? AND seq = ?", rows)


def frame_refs(conn: sqlite3.Connection, session_id: str) -> dict[int, tuple[str | None, str | None]]:
    """seq -> (exchange id, event id) of the session's frames that crossed HTTP (none in a
    database without the HTTP columns)."""
    if not has_column(conn, "frames", "exchange_id"):
        return {}
    return {seq: (exchange, event) for seq, exchange, event in conn.execute(
        "SELECT seq, exchange_id, event_id FROM frames WHERE session_id = ? "
        "AND (exchange_id IS NOT NULL OR event_id IS NOT NULL)", (session_id,))}


def insert_frames(conn: sqlite3.Connection, session_id: str, frames: Iterable[FrameRow], *, or_ignore: bool = False) -> None:
    conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME,
                     (frame_row(session_id, *f) for f in frames))


def insert_stderr(conn: sqlite3.Connection, session_id: str, lines: Iterable[StderrRow], *, or_ignore: bool = False) -> None:
    conn.executemany(_or_ignore(_INSERT_STDERR) if or_ignore else _INSERT_STDERR,
                     (stderr_row(session_id, *e) for e in lines))


def end_session(conn: sqlite3.Connection, session_id: str, ended_at: float | None, exit_status: int | None) -> None:
    conn.execute(
        "UPDATE sessions SET ended_at = coalesce(ended_at, ?), exit_status = coalesce(exit_status, ?) WHERE id = ?",
        (ended_at, exit_status, session_id),
    )


def frames_after(conn: sqlite3.Connection, session_id: str, seq: int, limit: int) -> list[tuple[int, bytes, str | None]]:
    """(seq, raw bytes, redacted) of up to `limit` frames after `seq`, in order."""
    return conn.execute("SELECT seq, CAST(raw AS BLOB), redacted FROM frames WHERE session_id = ? AND seq > ? "
                        "ORDER BY seq LIMIT ?", (session_id, seq, limit)).fetchall()


def replace_frame(conn: sqlite3.Connection, session_id: str, seq: int, raw: bytes, redacted: str) -> None:
    """Redaction (`mcptap redact`): the one change ever made to a recorded frame, and recorded."""
    conn.execute("UPDATE frames SET raw = ?, size = ?, redacted = ? WHERE session_id = ? AND seq = ?",
                 (stored_raw(raw), len(raw), redacted, session_id, seq))


def stderr_after(conn: sqlite3.Connection, session_id: str, seq: int, limit: int) -> list[tuple[int, bytes]]:
    """(seq, raw bytes) of up to `limit` stderr lines after `seq`, in order."""
    return conn.execute("SELECT seq, CAST(raw AS BLOB) FROM stderr_lines WHERE session_id = ? AND seq > ? "
                        "ORDER BY seq LIMIT ?", (session_id, seq, limit)).fetchall()


def replace_stderr(conn: sqlite3.Connection, session_id: str, seq: int, raw: bytes) -> None:
    """Redaction (`mcptap redact`) of a stderr line."""
    conn.execute("UPDATE stderr_lines SET raw = ? WHERE session_id = ? AND seq = ?", (stored_raw(raw), session_id, seq))


def replace_session_fields(conn: sqlite3.Connection, session_id: str, fields: dict) -> None:
    """Set fields of a session's row (those of SESSION_COLUMNS, never its id): an import's
    fields that came after its first frames, redaction (`mcptap redact`) of its command line."""
    cols = [c for c in fields if c in SESSION_COLUMNS and c != "id"]
    if cols:
        conn.execute(f"UPDATE sessions SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                     [*(fields[c] for c in cols), session_id])


def set_telemetry(conn: sqlite3.Connection, session_id: str, telemetry: str) -> None:
    """Record what the live telemetry did for a session (JSON: sessions.telemetry)."""
    conn.execute("UPDATE sessions SET telemetry = ? WHERE id = ?", (telemetry, session_id))


def iter_raw_frames(conn: sqlite3.Connection, session_id: str, *,
                    redacted: bool = False) -> Iterator[tuple[int, float, str, bytes]]:
    """(seq, ts, direction, raw bytes), in seq order (bytes: no decoding on the way). `redacted`:
    each row ends with the frame's `redacted` paths too (JSON text, or None), in the same read."""
    return conn.execute(f"SELECT seq, ts, direction, CAST(raw AS BLOB){_redacted(conn, redacted)} FROM frames "
                        "WHERE session_id = ? ORDER BY seq", (session_id,))


def iter_http_frames(conn: sqlite3.Connection, session_id: str, *,
                     redacted: bool = False) -> Iterator[tuple[int, float, str, bytes, str | None]]:
    """(seq, ts, direction, raw bytes, exchange id), in seq order; `redacted`: as `iter_raw_frames`."""
    return conn.execute(f"SELECT seq, ts, direction, CAST(raw AS BLOB), exchange_id{_redacted(conn, redacted)} "
                        "FROM frames WHERE session_id = ? ORDER BY seq", (session_id,))


def _redacted(conn: sqlite3.Connection, wanted: bool) -> str:
    """The `redacted` column to select after the others, when wanted (NULL in a file older than 0005)."""
    if not wanted:
        return ""
    return ", redacted" if has_column(conn, "frames", "redacted") else ", NULL"


def session_exchanges(conn: sqlite3.Connection, session_id: str) -> list[dict]:
    """A session's HTTP exchanges in the order they started ([] for a database without them)."""
    if not has_table(conn, "exchanges"):
        return []
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM exchanges WHERE session_id = ? ORDER BY started_at, id",
                                              (session_id,))]
    finally:
        conn.row_factory = None


def frames_per_session(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT session_id, count(*) FROM frames GROUP BY session_id"))


def count_frames(conn: sqlite3.Connection, session_ids: Sequence[str] | None = None) -> int:
    if session_ids is None:
        return conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    return sum(conn.execute("SELECT count(*) FROM frames WHERE session_id = ?", (s,)).fetchone()[0]
               for s in session_ids)


# -- reads ------------------------------------------------------------------------------------

def session_fields(conn: sqlite3.Connection, session_id: str, columns: Sequence[str]) -> tuple | None:
    """These columns (of SESSION_COLUMNS) of a session's row, or None without one."""
    unknown = set(columns) - set(SESSION_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of sessions: {sorted(unknown)}")
    return conn.execute(f"SELECT {', '.join(columns)} FROM sessions WHERE id = ?", (session_id,)).fetchone()


def stored_counts(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """Frames and stderr lines the database holds of a session."""
    return (conn.execute("SELECT count(*) FROM frames WHERE session_id = ?", (session_id,)).fetchone()[0],
            conn.execute("SELECT count(*) FROM stderr_lines WHERE session_id = ?", (session_id,)).fetchone()[0])


def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def list_sessions(conn: sqlite3.Connection, session_id: str | None = None) -> list[dict]:
    """Every session (or only `session_id`) with its frame counts per direction, oldest first."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            f"""
            SELECT s.*,
                   (SELECT count(*) FROM frames f WHERE f.session_id = s.id AND f.direction = 'c2s') AS c2s,
                   (SELECT count(*) FROM frames f WHERE f.session_id = s.id AND f.direction = 's2c') AS s2c,
                   (SELECT max(ts) FROM frames f WHERE f.session_id = s.id) AS last_ts
            FROM sessions s {"WHERE s.id = ?" if session_id is not None else ""} ORDER BY s.started_at, s.id
            """, () if session_id is None else (session_id,)
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(r) for r in rows]


def get_session(conn: sqlite3.Connection, session_id: str) -> dict:
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.row_factory = None
    if row is None:
        raise SessionNotFound(f"no session {session_id!r}")
    return dict(row)


def iter_frames(conn: sqlite3.Connection, session_id: str, after: int = 0) -> Iterator[Frame]:
    """The session's frames in seq order (`after`: those numbered above it)."""
    redacted = "redacted" if has_column(conn, "frames", "redacted") else "NULL"  # a file older than 0005, read-only
    cur = conn.execute(
        f"SELECT seq, ts, direction, CAST(raw AS BLOB), incomplete, {redacted} FROM frames WHERE session_id = ? "
        "AND seq > ? ORDER BY seq", (session_id, after),
    )
    for seq, ts, direction, raw, incomplete, paths in cur:
        yield Frame(session_id, seq, ts, direction, raw, bool(incomplete), paths, cut=incomplete == 2)


def cut_frames(conn: sqlite3.Connection, session_id: str) -> dict[int, int]:
    """The session's frames stored cut at the capture's --max-frame: seq -> full size (by the
    partial index of migration 0006; a database without it has none)."""
    try:
        return dict(conn.execute("SELECT seq, size FROM frames INDEXED BY frames_cut "
                                 "WHERE session_id = ? AND incomplete = 2", (session_id,)))
    except sqlite3.OperationalError:  # no such index: written before frames were ever cut
        return {}


def iter_stderr(conn: sqlite3.Connection, session_id: str, after: int = 0) -> Iterator[StderrLine]:
    """The server's stderr lines in seq order (`after`: those numbered above it)."""
    if not has_table(conn, "stderr_lines"):
        return
    cur = conn.execute(
        "SELECT seq, ts, CAST(raw AS BLOB), incomplete FROM stderr_lines WHERE session_id = ? AND seq > ? ORDER BY seq",
        (session_id, after),
    )
    for seq, ts, raw, incomplete in cur:
        yield StderrLine(session_id, seq, ts, raw, bool(incomplete))


def session_ids(conn: sqlite3.Connection) -> list[str]:
    """Every session's id, oldest first (no frame is read)."""
    return [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY started_at, id")]


def frames_mentioning(conn: sqlite3.Connection, session_id: str,
                      needles: Sequence[bytes]) -> Iterator[tuple[int, str, bytes]]:
    """(seq, direction, raw bytes) of the session's frames that contain any of `needles`, in seq
    order (the filter runs in SQLite: the other frames never reach Python)."""
    where = " OR ".join("instr(CAST(raw AS BLOB), ?) > 0" for _ in needles) or "1"
    return conn.execute(f"SELECT seq, direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? AND ({where}) "
                        "ORDER BY seq", (session_id, *needles))


def frames_by_seq(conn: sqlite3.Connection, session_id: str, seqs: Iterable[int]) -> list[tuple[int, str, bytes]]:
    """(seq, direction, raw bytes) of these frames of the session, in seq order."""
    wanted = sorted(set(seqs))
    out: list[tuple[int, str, bytes]] = []
    for i in range(0, len(wanted), 500):
        part = wanted[i:i + 500]
        out.extend(conn.execute("SELECT seq, direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? AND seq IN "
                                f"({','.join('?' * len(part))})", (session_id, *part)))
    out.sort()
    return out


def frames_read_by_seq(conn: sqlite3.Connection, session_id: str,
                       seqs: Iterable[int]) -> list[tuple[int, float, str, bytes, str | None]]:
    """(seq, ts, direction, raw bytes, redacted) of these frames of the session, in seq order
    (`redacted`: the JSON array of member paths capture replaced, or None)."""
    wanted = sorted(set(seqs))
    out: list = []
    for i in range(0, len(wanted), 500):
        part = wanted[i:i + 500]
        out.extend(conn.execute("SELECT seq, ts, direction, CAST(raw AS BLOB), redacted FROM frames WHERE session_id = ? "
                                f"AND seq IN ({','.join('?' * len(part))})", (session_id, *part)))
    out.sort()
    return out


def frames_read_if_marked(conn: sqlite3.Connection, session_id: str, seqs: Iterable[int],
                          needles: Sequence[bytes]) -> list[tuple[int, float, str, bytes, str | None]]:
    """`frames_read_by_seq` of those of these frames that capture redacted something in, or that
    hold one of `needles` (the filter runs in SQLite)."""
    wanted = sorted(set(seqs))
    marks = " OR ".join("instr(CAST(raw AS BLOB), ?) > 0" for _ in needles) or "0"
    out: list = []
    for i in range(0, len(wanted), 500):
        part = wanted[i:i + 500]
        out.extend(conn.execute("SELECT seq, ts, direction, CAST(raw AS BLOB), redacted FROM frames WHERE session_id = ? "
                                f"AND seq IN ({','.join('?' * len(part))}) AND (redacted IS NOT NULL OR {marks})",
                                (session_id, *part, *needles)))
    out.sort()
    return out


def frames_of_methods(conn: sqlite3.Connection, session_id: str,
                      methods: Sequence[str]) -> list[tuple[int, str, bytes]] | None:
    """(seq, direction, raw bytes) of the session's frames whose analysed messages have one of
    these methods, in seq order; None when the session has no analysed messages."""
    if not has_table(conn, "messages") or conn.execute(
            "SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", (session_id,)).fetchone() is None:
        return None
    marks = ",".join("?" * len(methods))
    return conn.execute("SELECT DISTINCT f.seq, f.direction, CAST(f.raw AS BLOB) FROM messages m JOIN frames f "
                        "ON f.session_id = m.session_id AND f.seq = m.frame_seq "
                        f"WHERE m.session_id = ? AND m.method IN ({marks}) ORDER BY f.seq",
                        (session_id, *methods)).fetchall()
