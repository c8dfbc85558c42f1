"""A display filter (analyzer/store/filterlang.py) as SQL over the store: a WHERE clause over one
frame (`f` frames, `m` its own `messages` row, `s` its session, `x` its HTTP exchange; `g` a finding
on it, `r` its code's row of `finding_groups`) that is 1 or
0, never NULL (a field the frame lacks makes its tests false; `a != b` is `not a == b`), the
frames it selects, and how many of a session's fall in each slice of a time window. Regular expressions are RE2's search (filterlang.regex: linear in the text, so
no pattern holds SQLite's callback for long), registered on the connection."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator

from mcptap.store import filterlang
from mcptap.store.connections import has_column
from mcptap.store.queries import frame_columns

_COLUMNS = {"session": "f.session_id", "seq": "f.seq", "time": "(f.ts - s.started_at)", "dir": "f.direction",
            "kind": "m.kind", "method": "m.method", "id": "m.id", "latency": "m.latency_s", "size": "f.size",
            "status": "x.status", "text": "f.raw", "run": "s.run", "server": "s.label"}
_FINDING_COLUMNS = {"finding": "g.code", "severity": "g.severity",
                    "finding.group": "(SELECT r.grp FROM finding_groups r WHERE r.code = g.code)"}


@functools.lru_cache(maxsize=64)
def _regex(pattern: str):
    return filterlang.regex(pattern)


def _regexp(value, pattern) -> int:
    if value is None:
        return 0
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    return 1 if _regex(pattern).search(str(value)) else 0


def prepare(conn: sqlite3.Connection) -> None:
    """Registers the function `mcptap_regexp(value, pattern)` the compiled filters use."""
    conn.create_function("mcptap_regexp", 2, _regexp, deterministic=True)


def where(tree) -> tuple[str, list]:
    """(SQL, parameters) of a parsed filter."""
    params: list = []
    return _node(tree, params), params


def _node(tree, params: list) -> str:
    op = tree[0]
    if op in ("or", "and"):
        return f"({_node(tree[1], params)} {op.upper()} {_node(tree[2], params)})"
    if op == "not":
        return f"(NOT {_node(tree[1], params)})"
    if op == "in":
        return _node(filterlang.balanced("or", [("cmp", tree[1], "==", v) for v in tree[2]]), params)
    if op == "has":
        return f"COALESCE({_has(tree[1], params)}, 0)"
    _, field, cmp, value = tree
    if cmp == "!=":
        return f"(NOT {_node(('cmp', field, '==', value), params)})"
    return f"COALESCE({_test(field, cmp, value, params)}, 0)"


def _has(field, params: list) -> str:
    if isinstance(field, tuple):
        params.append(_json_path(field))
        return f"(CASE WHEN typeof(f.raw) = 'text' AND json_valid(f.raw) THEN json_type(f.raw, ?) IS NOT NULL END)"
    if field in _FINDING_COLUMNS:
        return "EXISTS (SELECT 1 FROM findings g WHERE g.session_id = f.session_id AND g.frame_seq = f.seq)"
    return f"({_COLUMNS[field]} IS NOT NULL)"


def _compare(column: str, cmp: str, value, params: list) -> str:
    """`column cmp value` for a plain column (contains: a substring; ~: a regular expression)."""
    if cmp == "contains":
        params.append(value)
        return f"(instr({column}, ?) > 0)"
    if cmp == "~":
        params.append(value)
        return f"mcptap_regexp({column}, ?)"
    params.append(value)
    return f"({column} {'=' if cmp == '==' else cmp} ?)"


def _test(field, cmp: str, value, params: list) -> str:
    kind, v = value
    if isinstance(field, tuple):
        return _json_test(field, cmp, value, params)
    if field in _FINDING_COLUMNS:
        inner = _compare(_FINDING_COLUMNS[field], cmp, v, params)
        return f"EXISTS (SELECT 1 FROM findings g WHERE g.session_id = f.session_id AND g.frame_seq = f.seq AND {inner})"
    if field == "session" and cmp == "==":
        params.extend([len(v), v])
        return "(substr(f.session_id, 1, ?) = ?)"
    if field == "run" and cmp == "==":  # the run's id, a start of it, or its handle (an end of it)
        params.extend([len(v), v, len(v), v])
        return "(substr(s.run, 1, ?) = ? OR substr(s.run, -?) = ?)"
    if field == "id" and cmp == "==":
        v = filterlang.id_text(value)
    return _compare(_COLUMNS[field], cmp, v, params)


def _json_path(steps: tuple) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f'."{s}"' for s in steps)


def _json_test(steps: tuple, cmp: str, value, params: list) -> str:
    kind, v = value
    path = _json_path(steps)
    guard = "typeof(f.raw) = 'text' AND json_valid(f.raw)"
    if kind == "bool":
        params.append(path)
        return f"(CASE WHEN {guard} THEN json_type(f.raw, ?) = '{'true' if v else 'false'}' END)"
    if kind == "null":
        params.append(path)
        return f"(CASE WHEN {guard} THEN json_type(f.raw, ?) = 'null' END)"
    types = "('integer', 'real')" if kind == "num" else "('text')"
    inner = _compare("json_extract(f.raw, ?)", cmp, v, [])
    params.extend([path, path, v])
    return f"(CASE WHEN {guard} THEN json_type(f.raw, ?) IN {types} AND {inner} END)"


_MESSAGE_FIELDS = ("kind", "method", "id", "latency")


def needs_message(tree) -> bool:
    """Whether the filter is false for every frame without a `messages` row (a test of kind,
    method, id or latency that a missing field makes false): then the frames are found from the
    messages that pass, not by looking up each frame's message (a million frames: several times
    faster)."""
    op = tree[0]
    if op == "and":
        return needs_message(tree[1]) or needs_message(tree[2])
    if op == "or":
        return needs_message(tree[1]) and needs_message(tree[2])
    if op == "not":
        return False
    if op in ("has", "in"):
        return tree[1] in _MESSAGE_FIELDS
    return tree[2] != "!=" and tree[1] in _MESSAGE_FIELDS


def select(conn: sqlite3.Connection, tree, sessions: list[str] | None = None) -> tuple[str, list]:
    """(SQL, parameters) of the (session_id, seq) of every frame the filter selects, of these
    sessions (None: all), in the sessions' start order, then seq."""
    prepare(conn)
    have = frame_columns(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    clause, params = where(tree)
    sessions_table = "sessions" if has_column(conn, "sessions", "run") else "(SELECT *, NULL AS run FROM sessions)"
    joins = f" JOIN {sessions_table} s ON s.id = f.session_id"  # a file recorded before runs: none has one
    if "messages" in tables:
        joins += (" JOIN" if needs_message(tree) else " LEFT JOIN") + " messages m ON m.session_id = f.session_id AND m.frame_seq = f.seq AND m.idx IS NULL"
    else:
        joins += " LEFT JOIN (SELECT NULL AS kind, NULL AS method, NULL AS id, NULL AS latency_s) m ON 0"
    if "exchanges" in tables and "exchange_id" in have:
        joins += " LEFT JOIN exchanges x ON x.id = f.exchange_id"
    else:
        joins += " LEFT JOIN (SELECT NULL AS status) x ON 0"
    if "findings" not in tables:
        clause = clause.replace("FROM findings g", "FROM (SELECT NULL AS session_id, NULL AS frame_seq, "
                                "NULL AS code, NULL AS severity) g")
    if "finding_groups" not in tables:  # analysed before the store kept the rules' groups
        clause = clause.replace("FROM finding_groups r", "FROM (SELECT NULL AS code, NULL AS grp) r")
    scope = ""
    if sessions is not None:
        scope = f" AND f.session_id IN ({', '.join('?' * len(sessions))})"
        params = params + list(sessions)
    return (f"SELECT f.session_id, f.seq FROM frames f{joins} WHERE {clause}{scope} "
            "ORDER BY s.started_at, f.session_id, f.seq", params)


def first(conn: sqlite3.Connection, tree, session_id: str, limit: int) -> list[int]:
    """The seqs of the session's first `limit` frames the filter selects, in seq order: the query
    stops after them (a page of a filter's list is had without finding all its frames)."""
    sql, params = select(conn, tree, [session_id])
    sql = sql[:sql.rindex(" ORDER BY ")] + " ORDER BY f.seq LIMIT ?"
    return [seq for _, seq in conn.execute(sql, (*params, limit))]


def histogram(conn: sqlite3.Connection, tree, session_id: str, start: float, end: float, buckets: int) -> list[int]:
    """How many of the session's frames the filter selects fall in each of `buckets` equal slices
    of start <= ts <= end."""
    counts = [0] * buckets
    width = (end - start) / buckets
    if not width > 0:
        return counts
    sql, params = select(conn, tree, [session_id])
    sql = sql[:sql.rindex(" ORDER BY ")].replace(
        "SELECT f.session_id, f.seq FROM", "SELECT min(?, CAST((f.ts - ?) / ? AS INTEGER)), count(*) FROM", 1)
    rows = conn.execute(sql + " AND f.ts BETWEEN ? AND ? GROUP BY 1", (buckets - 1, start, width, *params, start, end))
    for b, n in rows:
        counts[max(0, b)] += n
    return counts


def frames(conn: sqlite3.Connection, tree, sessions: list[str] | None = None) -> Iterator[tuple[str, int]]:
    """(session id, seq) of each frame the filter selects (see `select`)."""
    sql, params = select(conn, tree, sessions)
    yield from conn.execute(sql, params)

