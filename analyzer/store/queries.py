"""The statements the faces read the store's tables with, for shapes of their own (the pandas
API, mcptap.data; the HTML report): built here with their parameters, run there (pandas reads
them in chunks). Times are Unix seconds; a statement "of a session" takes the session id as its
first parameter."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from mcptap.store.rows import Frame


def time_clause(start: float | None, end: float | None, ts: str) -> tuple[str, list]:
    """` AND ts >= start AND ts < end`, for what is given."""
    clauses, params = "", []
    if start is not None:
        clauses += f" AND {ts} >= ?"
        params.append(start)
    if end is not None:
        clauses += f" AND {ts} < ?"
        params.append(end)
    return clauses, params


def where(alias: str, ids: list[str] | None, start: float | None, end: float | None,
          ts: str = "ts") -> tuple[str, list]:
    """` WHERE` these sessions (None: all) and the time range, or nothing."""
    clauses, params = [], []
    if ids is not None:
        clauses.append(f"{alias}.session_id IN ({', '.join('?' for _ in ids)})")
        params += ids
    timed, times = time_clause(start, end, ts)
    if timed:
        clauses.append(timed.removeprefix(" AND "))
        params += times
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def coded(column: str, categories: Sequence[str]) -> str:
    """SQL giving a categorical's code for a text column (-1: missing or not a category): small
    integers, which Python need not allocate, instead of a string per row."""
    cases = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(categories) if "'" not in c)
    return f"CASE {column} {cases} ELSE -1 END"


def distinct(conn: sqlite3.Connection, table: str, column: str) -> list:
    """The values a column of an analysis table holds (`messages.method`, `findings.code`)."""
    if (table, column) not in (("messages", "method"), ("findings", "code")):
        raise ValueError(f"no distinct values of {table}.{column} are read")
    return [r[0] for r in conn.execute(f"SELECT DISTINCT {column} FROM {table}") if r[0] is not None]


def frame_columns(conn: sqlite3.Connection) -> set[str]:
    """The columns `frames` has in this file (an older file lacks the HTTP ones)."""
    return {r[1] for r in conn.execute("PRAGMA table_info(frames)")}


EMPTY = "SELECT 1 WHERE 0"
"""A statement that reads nothing (a table not there yet)."""


def sessions_overview(analysed: bool, run: bool = False) -> str:
    """One row per session: the recorded row, its frame count and last frame time, and, once
    analysed (`analysed`: the table is there), its revision and finding counts; `run`: the run it
    belongs to too."""
    return ("SELECT s.id, s.label, s.transport, s.started_at, s.ended_at, s.command, s.upstream, s.exit_status, "
            + ("s.run, " if run else "")
            + "(SELECT count(*) FROM frames f WHERE f.session_id = s.id) AS frames, "
            "(SELECT max(ts) FROM frames f WHERE f.session_id = s.id) AS last_ts"
            + (", a.revision, a.revision_source, a.errors, a.warnings, a.infos FROM sessions s "
               "LEFT JOIN analyses a ON a.session_id = s.id" if analysed else
               ", NULL AS revision, NULL AS revision_source, NULL AS errors, NULL AS warnings, NULL AS infos "
               "FROM sessions s")
            + " ORDER BY s.started_at, s.id")


def frames_of_session(columns: Sequence[str], have: set[str], directions: Sequence[str], start: float | None,
                      end: float | None) -> tuple[str, list]:
    """A session's frames in seq order, these columns (session_id left out: the caller knows
    it; direction as its code in `directions`; a column the file lacks as NULL)."""
    select = ", ".join(coded("f.direction", directions) + " AS direction" if c == "direction" else
                       f"f.{c}" if c in have else f"NULL AS {c}" for c in columns if c != "session_id")
    when, params = time_clause(start, end, "f.ts")
    return f"SELECT {select or 'NULL'} FROM frames f WHERE f.session_id = ?{when} ORDER BY f.seq", params


def number_methods(conn: sqlite3.Connection, methods: Sequence[str]) -> None:
    """The methods' codes (their position in `methods`) in a temporary table that
    `messages_of_session` joins, so a method comes back as a small integer."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS mt_methods (name TEXT PRIMARY KEY, code INTEGER)")
    conn.execute("DELETE FROM temp.mt_methods")
    conn.executemany("INSERT INTO temp.mt_methods VALUES (?, ?)", [(name, i) for i, name in enumerate(methods)])


def messages_of_session(columns: Sequence[str], directions: Sequence[str], kinds: Sequence[str],
                        start: float | None, end: float | None) -> tuple[str, list]:
    """A session's messages rows in (frame, element) order, with their frame's time: direction
    and kind as codes, method as its code from `number_methods` (-1: none)."""
    expressions = {"ts": "f.ts", "direction": coded("m.direction", directions), "kind": coded("m.kind", kinds),
                   "method": "coalesce(mm.code, -1)"}
    select = ", ".join(f"{expressions.get(c, 'm.' + c)} AS {c}" for c in columns if c != "session_id")
    when, params = time_clause(start, end, "f.ts")
    join = " JOIN frames f ON f.session_id = m.session_id AND f.seq = m.frame_seq" if "ts" in columns or when else ""
    return (f"SELECT {select or 'NULL'} FROM messages m LEFT JOIN temp.mt_methods mm ON mm.name = m.method{join} "
            f"WHERE m.session_id = ?{when} ORDER BY m.frame_seq, m.idx"), params


def findings_with_time(ids: list[str] | None, start: float | None, end: float | None,
                       filters: dict[str, list[str]]) -> tuple[str, list]:
    """Findings of these sessions (None: all) in the time range, with their frame's time, where
    each column of `filters` (severity, code) is one of its values."""
    clause, params = where("g", ids, start, end, "f.ts")
    for column, values in filters.items():
        if column not in ("severity", "code"):
            raise ValueError(f"findings are not filtered by {column}")
        clause += (" AND " if clause else " WHERE ") + f"g.{column} IN ({', '.join('?' for _ in values)})"
        params += values
    return ("SELECT g.session_id, g.frame_seq, g.idx, f.ts, g.code, g.severity, g.message, g.related_frame "
            "FROM findings g LEFT JOIN frames f ON f.session_id = g.session_id AND f.seq = g.frame_seq"
            f"{clause} ORDER BY g.session_id, coalesce(g.frame_seq, -1), g.rowid"), params


def exchanges_in(ids: list[str] | None, start: float | None, end: float | None) -> tuple[str, list]:
    """HTTP exchanges of these sessions (None: all) started in the time range, in start order."""
    clause, params = where("e", ids, start, end, "e.started_at")
    return f"SELECT * FROM exchanges e{clause} ORDER BY e.started_at, e.id", params


def requests_and_errors(ids: list[str] | None, answers_of: Sequence[str] = ()) -> tuple[str, list | None]:
    """The messages rows of requests and error answers (session_id, frame_seq, idx, kind, method,
    paired_frame, latency_s) of these sessions (None: all), and every answer of the sessions
    `answers_of`, in one statement."""
    clause = "" if ids is None else f" AND session_id IN ({', '.join('?' * len(ids))})"
    answers = f" OR (kind = 'response' AND session_id IN ({', '.join('?' * len(answers_of))}))" if answers_of else ""
    return ("SELECT session_id, frame_seq, idx, kind, method, paired_frame, latency_s FROM messages "
            f"WHERE (kind IN ('request', 'error'){answers}){clause}"), [*answers_of, *(ids or [])] or None


def joinable_sessions(conn: sqlite3.Connection, ids: Sequence[str] | None, revisions: Sequence[str]) -> list[str]:
    """Of these sessions (None: all), those analysed at one of `revisions` with a frame that
    mentions `input_required` or `taskId`: the only ones whose requests may join into operations."""
    if not revisions:
        return []
    clause = "" if ids is None else f" AND a.session_id IN ({', '.join('?' * len(ids))})"
    sql = (f"SELECT a.session_id FROM analyses a WHERE a.revision IN ({', '.join('?' * len(revisions))}){clause} "
           "AND EXISTS (SELECT 1 FROM frames f WHERE f.session_id = a.session_id AND "
           "(instr(CAST(f.raw AS BLOB), CAST('input_required' AS BLOB)) > 0 OR "
           "instr(CAST(f.raw AS BLOB), CAST('taskId' AS BLOB)) > 0))")
    return [row[0] for row in conn.execute(sql, [*revisions, *(ids or [])])]


def tool_answers(ids: list[str] | None) -> tuple[str, list | None]:
    """(session_id, frame_seq, idx, raw bytes) of the answers to tools/call of these sessions
    (None: all): the frames a tool's error (`isError: true`) can be in."""
    clause = "" if ids is None else f" AND m.session_id IN ({', '.join('?' * len(ids))})"
    return ("SELECT m.session_id, m.frame_seq, m.idx, CAST(f.raw AS BLOB) FROM messages m JOIN frames f "
            "ON f.session_id = m.session_id AND f.seq = m.frame_seq "
            f"WHERE m.kind = 'response' AND m.method = 'tools/call'{clause}"), ids or None


def frame_raw(conn: sqlite3.Connection, session_id: str, seq: int) -> str | bytes | None:
    """One frame's stored raw (str when UTF-8, else bytes), or None without that frame."""
    row = conn.execute("SELECT raw FROM frames WHERE session_id = ? AND seq = ?", (session_id, seq)).fetchone()
    return row[0] if row is not None else None


def viewer_frames(conn: sqlite3.Connection, session_id: str, have: set[str], analysed: bool,
                  directions: Sequence[str], kinds: Sequence[str]) -> sqlite3.Cursor:
    """A session's frames in seq order for the HTML viewer, without their bytes: (seq, ts,
    direction code, size, exchange id, and the frame's own `messages` row: kind code, id, method,
    paired frame, latency; whether raw is a BLOB). `have`: the columns `frames` has
    (frame_columns); `analysed`: the `messages` table is there (else kind -1, the rest NULL)."""
    exchange = "f.exchange_id" if "exchange_id" in have else "NULL"
    message = (f"{coded('m.kind', kinds)}, m.id, m.method, m.paired_frame, m.latency_s" if analysed else
               "-1, NULL, NULL, NULL, NULL")
    join = (" LEFT JOIN messages m ON m.session_id = f.session_id AND m.frame_seq = f.seq AND m.idx IS NULL"
            if analysed else "")
    return conn.execute(f"SELECT f.seq, f.ts, {coded('f.direction', directions)}, f.size, {exchange}, {message}, "
                        f"typeof(f.raw) = 'blob' FROM frames f{join} WHERE f.session_id = ? ORDER BY f.seq",
                        (session_id,))


def frame_texts(conn: sqlite3.Connection, session_id: str, cut: int, seqs: Sequence[int] | None):
    """(seq, the first `cut` characters of raw, or bytes when it is a BLOB) of a session's frames:
    these seqs, or (None) every one."""
    sql = "SELECT seq, substr(raw, 1, ?) FROM frames WHERE session_id = ?"
    if seqs is None:
        yield from conn.execute(sql, (cut, session_id))
        return
    for start in range(0, len(seqs), 500):
        chunk = list(seqs[start:start + 500])
        yield from conn.execute(sql + f" AND seq IN ({', '.join('?' * len(chunk))})", (cut, session_id, *chunk))
def exchange_frames(conn: sqlite3.Connection, session_id: str) -> Iterator[Frame]:
    """An HTTP session's frames with where they crossed (exchange and SSE event ids), in seq order."""
    cur = conn.execute("SELECT seq, ts, direction, CAST(raw AS BLOB), exchange_id, event_id, incomplete FROM frames "
                       "WHERE session_id = ? ORDER BY seq", (session_id,))
    for seq, ts, direction, raw, exchange_id, event_id, incomplete in cur:
        yield Frame(session_id, seq, ts, direction, raw, bool(incomplete), None, exchange_id, event_id, incomplete == 2)
