"""Every cell a reader takes from the database checked against the type its column declares
(analyzer/store/migrations.py), since SQLite stores any value in any column (`frames.ts = 'soon'` is
allowed): a wrong one is refused in one line naming the table, column and row (BadCell), never a
traceback further on. What a reader coerces anyway is accepted: an integer where a REAL belongs,
a number where a frame's bytes belong (`CAST(raw AS BLOB)` reads its text), a value no reader
does arithmetic with.

Checking a whole frames table reads every page of it (as long as the analysis itself), so the
readers check at once only what is cheap and what would otherwise flow silently into results
(`check_cheap`: the sessions and analyses rows, and the frames' session and seq, read from their
index), and check the rest when something fails (`diagnosed`): an exception raised while a
wrong cell is there becomes BadCell naming it; with no wrong cell it is mcptap's bug and stays
what it is."""

from __future__ import annotations

import sqlite3
import contextlib
from collections.abc import Iterator, Sequence

from mcptap.errors import MCPTapError
from mcptap.wire.textsafe import printable

TEXT, INT, REAL, BYTES = ("text",), ("integer",), ("integer", "real"), ("text", "blob", "integer", "real")
WHAT = {TEXT: "text", INT: "an integer", REAL: "a number", BYTES: "bytes or text"}

# table -> column -> (the storage classes it may hold, whether NULL is allowed, the values allowed or None)
COLUMNS: dict[str, dict[str, tuple[tuple[str, ...], bool, tuple[str, ...] | None]]] = {
    "sessions": {
        "id": (TEXT, False, None), "transport": (TEXT, False, None), "label": (TEXT, True, None),
        "started_at": (REAL, False, None), "ended_at": (REAL, True, None), "command": (TEXT, True, None),
        "upstream": (TEXT, True, None), "exit_status": (INT, True, None), "recorder": (TEXT, True, None),
        "host": (TEXT, True, None), "pid": (INT, True, None), "source": (TEXT, True, None),
        "replay_of": (TEXT, True, None), "run": (TEXT, True, None), "client": (TEXT, True, None),
        "telemetry": (TEXT, True, None),
    },
    "frames": {
        "session_id": (TEXT, False, None), "seq": (INT, False, None), "ts": (REAL, False, None),
        "direction": (TEXT, False, ("c2s", "s2c")), "raw": (BYTES, False, None), "size": (INT, False, None),
        "incomplete": (INT, False, None), "exchange_id": (TEXT, True, None), "event_id": (TEXT, True, None),
        "redacted": (TEXT, True, None),
    },
    "stderr_lines": {
        "session_id": (TEXT, False, None), "seq": (INT, False, None), "ts": (REAL, False, None),
        "raw": (BYTES, False, None), "incomplete": (INT, False, None),
    },
    "messages": {
        "session_id": (TEXT, False, None), "frame_seq": (INT, False, None), "idx": (INT, True, None),
        "direction": (TEXT, False, ("c2s", "s2c")),
        "kind": (TEXT, False, ("request", "notification", "response", "error", "batch", "invalid", "unparseable")),
        "id": (TEXT, True, None), "method": (TEXT, True, None), "paired_frame": (INT, True, None),
        "latency_s": (REAL, True, None),
    },
    "findings": {
        "session_id": (TEXT, False, None), "frame_seq": (INT, True, None), "idx": (INT, True, None),
        "code": (TEXT, False, None), "severity": (TEXT, False, ("error", "warning", "info")),
        "message": (TEXT, False, None), "related_frame": (INT, True, None),
    },
    "analyses": {
        "session_id": (TEXT, False, None), "revision": (TEXT, True, None), "revision_source": (TEXT, False, None),
        "frames": (INT, False, None), "kinds": (TEXT, False, None), "errors": (INT, False, None),
        "warnings": (INT, False, None), "infos": (INT, False, None), "analyzed_at": (REAL, False, None),
        "analyzer": (TEXT, False, None),
    },
    "exchanges": {
        "id": (TEXT, False, None), "session_id": (TEXT, True, None), "method": (TEXT, False, None),
        "url": (TEXT, False, None), "status": (INT, True, None), "request_type": (TEXT, True, None),
        "response_type": (TEXT, True, None), "mcp_session_id": (TEXT, True, None),
        "assigned_session": (TEXT, True, None), "protocol_version": (TEXT, True, None),
        "accept": (TEXT, True, None), "last_event_id": (TEXT, True, None), "content_encoding": (TEXT, True, None),
        "endpoint": (TEXT, True, None), "events": (INT, False, None), "request_headers": (TEXT, True, None),
        "response_headers": (TEXT, True, None), "redacted": (TEXT, True, None), "started_at": (REAL, False, None),
        "request_end": (REAL, True, None), "response_at": (REAL, True, None), "ended_at": (REAL, True, None),
        "outcome": (TEXT, True, None), "role": (TEXT, True, None), "request_body": (BYTES, True, None),
        "response_body": (BYTES, True, None), "rewritten": (TEXT, True, None),
    },
}

RECORDED = ("sessions", "frames", "stderr_lines", "exchanges")
"""What recording wrote (analysis reads these; it replaces the rest)."""

KEYS = {"sessions": ("id",), "frames": ("session_id", "seq"), "stderr_lines": ("session_id", "seq"),
        "messages": ("session_id", "frame_seq", "idx"), "findings": ("session_id", "frame_seq"),
        "analyses": ("session_id",), "exchanges": ("id",)}
"""What names a row in the one-line refusal (beside its rowid)."""

SESSION_COLUMN = {"sessions": "id", "exchanges": "session_id"}
"""The column naming a row's session, where it is not `session_id`."""


class BadCell(MCPTapError):
    """A cell holds a value of a type its column does not take."""


def check(conn: sqlite3.Connection, sessions: Sequence[str] | None = None,
          tables: Sequence[str] = tuple(COLUMNS), columns: dict[str, Sequence[str]] | None = None) -> None:
    """Every cell of `tables` (of the rows of `sessions`, when given; of only `columns[table]`,
    when given) is of its column's type; BadCell for the first that is not."""
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in tables:
        if table in present:
            _check_table(conn, table, sessions, None if columns is None else columns.get(table))


CHEAP = {"sessions": tuple(COLUMNS["sessions"]), "analyses": tuple(COLUMNS["analyses"]),
         "frames": ("session_id", "seq"), "stderr_lines": ("session_id", "seq")}
"""What `check_cheap` looks at: the small tables whole, and of the large ones the columns their
primary key index holds (read from the index, not the table: 40 bytes a frame)."""


def check_cheap(conn: sqlite3.Connection, sessions: Sequence[str] | None = None,
                tables: Sequence[str] = tuple(CHEAP)) -> None:
    """`check` of what costs little (CHEAP), before a reader starts."""
    check(conn, sessions, [t for t in tables if t in CHEAP], CHEAP)


@contextlib.contextmanager
def diagnosed(conn: sqlite3.Connection, sessions: Sequence[str] | None = None,
              tables: Sequence[str] = tuple(COLUMNS)) -> Iterator[None]:
    """An exception raised inside becomes BadCell when a cell of `tables` (of `sessions`) is of
    the wrong type; mcptap's own errors, and any exception while every cell is right, pass."""
    try:
        yield
    except MCPTapError:
        raise
    except Exception:
        check(conn, sessions, tables)
        raise


def _condition(column: str, allowed: tuple[str, ...], nullable: bool, values: tuple[str, ...] | None) -> str:
    kinds = ", ".join(f"'{k}'" for k in allowed + (("null",) if nullable else ()))
    condition = f"typeof(\"{column}\") IN ({kinds})"
    if values is not None:
        condition += f" AND (\"{column}\" IS NULL OR \"{column}\" IN ({', '.join(repr(v) for v in values)}))"
    return condition


def _check_table(conn: sqlite3.Connection, table: str, sessions: Sequence[str] | None,
                 only: Sequence[str] | None = None) -> None:
    have = [row[1] for row in conn.execute(f"PRAGMA table_info(\"{table}\")")]
    spec = {c: s for c, s in COLUMNS[table].items() if c in have and (only is None or c in only)}
    if not spec:
        return
    conditions = {c: _condition(c, *s) for c, s in spec.items()}
    where = " AND ".join(f"({c})" for c in conditions.values())
    params: list = []
    scope = ""
    by = SESSION_COLUMN.get(table, "session_id")
    if sessions is not None and by in spec:
        scope = f" AND \"{by}\" IN ({', '.join('?' for _ in sessions)})"
        params = list(sessions)
    keys = [k for k in KEYS[table] if k in spec]
    columns = ", ".join(["rowid"] + [f"\"{k}\"" for k in keys] + [f"({c}) AS ok_{i}" for i, c in
                                                                   enumerate(conditions.values())])
    sql = f"SELECT {columns} FROM \"{table}\" WHERE NOT ({where}){scope} LIMIT 1"
    try:
        row = conn.execute(sql, params).fetchone()
    except sqlite3.OperationalError as exc:  # "too many SQL variables": check the sessions in parts
        if sessions is None or len(sessions) <= 500 or "too many" not in str(exc):
            raise
        for start in range(0, len(sessions), 500):
            _check_table(conn, table, sessions[start:start + 500], only)
        return
    if row is None:
        return
    rowid, key_values, oks = row[0], row[1:1 + len(keys)], row[1 + len(keys):]
    column = next(c for c, ok in zip(conditions, oks) if not ok)
    raise BadCell(_message(conn, table, column, spec[column], rowid, dict(zip(keys, key_values))))


def _message(conn: sqlite3.Connection, table: str, column: str, spec: tuple, rowid: int, keys: dict) -> str:
    allowed, nullable, values = spec
    kind, value = conn.execute(f"SELECT typeof(\"{column}\"), \"{column}\" FROM \"{table}\" WHERE rowid = ?",
                               (rowid,)).fetchone()
    if kind == "null":
        what = "NULL"
    else:
        what = f"{kind} {_short(value)}"
    wanted = f"one of {', '.join(values)}" if values is not None and kind in allowed else WHAT[allowed]
    row = ", ".join(f"{k} {_short(v)}" for k, v in keys.items() if k != column)
    return (f"{table}.{column} of row {rowid}" + (f" ({row})" if row else "") + f" holds {what}, not {wanted} "
            "(mcptap never writes that: correct or delete the row)")


def _short(value) -> str:
    text = repr(bytes(value) if isinstance(value, (bytes, memoryview)) else value)
    return printable(text if len(text) <= 40 else text[:39] + "…")
