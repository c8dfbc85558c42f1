"""The pandas API: a recording's tables as DataFrames, for notebooks and scripts.

    import mcptap.data as mt

    db = mt.open_db("incident.db", fresh=True)              # a database (fresh: made anew)
    mt.import_log(db, "incident.jsonl")                     # frame-log, mitmproxy dump or HAR: sessions imported
    mt.analyze(db)                                          # mcptap analyze: one row per session analysed
    mt.export_log(db, "audit.jsonl", session="inc")         # frame-log JSONL, as mcptap export
    mt.sessions("mcp.db")                                   # one row per session (mt.runs: one per run)
    mt.frames("mcp.db", session="0193b2", columns=["seq", "ts", "direction", "size"])
    mt.messages("mcp.db", start="2026-11-30 10:00", end="2026-11-30 10:05")
    mt.findings("mcp.db", severity="error")
    mt.exchanges("mcp.db")                                  # HTTP exchanges
    mt.frames("mcp.db", filter='method == "tools/call" and latency > 500ms')  # a display filter
    mt.latency("mcp.db")                                    # per method: calls, errors, tool_errors, p50_s, ...
    mt.operations("mcp.db", session="0193b2")               # each request with its answer, outcome, findings
    mt.raw("mcp.db", session, 4012)                         # a frame's exact text (bytes if not UTF-8)
    mt.value("mcp.db", session, 4012)                       # ... parsed, exactly (analyzer/wire/jsonwire.py)

Timestamps are timezone-aware datetimes (UTC), kinds, methods, codes, directions and session ids
categoricals. Frames are read without their text unless it is asked for (`columns=[..., "raw"]`),
and JSON is parsed only on demand (`value`, or `parse` over a column). Everything is read in
chunks of CHUNK_ROWS, filtered in SQL (session, time range, the columns asked for), so a large
file is never loaded whole. `messages` and `findings` come from `mcptap analyze` (empty until
it has run). Any function takes a path or an open sqlite3 connection. A cell of a type its column
does not take (SQLite allows `frames.ts = 'soon'`) is read as it is where pandas takes it, and
raises mcptap.store.cells.BadCell naming it where it would break a loader. `frames`, `messages`
and `findings` take a display filter (docs/filters.md): the rows of the frames it selects."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from mcptap import extras

extras.need("notebook", "the pandas API (mcptap.data)")

import numpy as np  # noqa: E402 - after the check that names the extra
import pandas as pd  # noqa: E402

from mcptap import store  # noqa: E402
from mcptap import dataparquet, datalatency as latency_rows  # noqa: E402
from mcptap.dataruns import runs  # noqa: E402,F401  (mcptap.data.runs)
from mcptap.store import cells, queries
from mcptap.wire import jsonwire

CHUNK_ROWS = 200_000

KINDS = ["request", "notification", "response", "error", "batch", "invalid", "unparseable"]
DIRECTIONS = ["c2s", "s2c"]
SEVERITIES = ["error", "warning", "info"]

FRAME_COLUMNS = ["session_id", "seq", "ts", "direction", "size", "incomplete", "exchange_id", "event_id", "redacted",
                 "raw"]
MESSAGE_COLUMNS = ["session_id", "frame_seq", "idx", "ts", "direction", "kind", "id", "method", "paired_frame",
                   "latency_s", "tool_error", "operation", "step", "operation_latency_s"]
JOIN_COLUMNS = ["operation", "step", "operation_latency_s"]
FINDING_COLUMNS = ["session_id", "frame_seq", "idx", "ts", "code", "severity", "message", "related_frame"]


def _parquet(db, filter: str | None = None) -> bool:
    """`db` is a Parquet dataset's folder (dataparquet.py reads it); a display filter reads SQLite."""
    if not isinstance(db, (str, os.PathLike)) or not dataparquet.is_dataset(db):
        return False
    if filter is not None:
        raise ValueError("a display filter (filter=) reads a SQLite database, not a Parquet dataset")
    extras.need("parquet", "a Parquet dataset")
    return True


# -- opening ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _conn(db: str | sqlite3.Connection, tables: Sequence[str] = ()) -> Iterator[sqlite3.Connection]:
    """The database open, for reading `tables`: a cell of the wrong type that breaks the read is
    BadCell naming the cell, not an error deep in pandas (analyzer/store/cells.py)."""
    if isinstance(db, sqlite3.Connection):
        cells.check_cheap(db, tables=tables)
        with cells.diagnosed(db, tables=tables):
            yield db
        return
    conn = store.open_existing(db)
    try:
        cells.check_cheap(conn, tables=tables)
        with cells.diagnosed(conn, tables=tables):
            yield conn
    finally:
        conn.close()


def _sessions_filter(conn: sqlite3.Connection, session: str | Sequence[str] | None) -> list[str] | None:
    """Session ids from ids, unique id prefixes or labels (None: all)."""
    return store.resolve_sessions(conn, session)


def _seconds(when: Any) -> float | None:
    if when is None:
        return None
    if isinstance(when, (int, float)):
        return float(when)
    stamp = pd.Timestamp(when)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return stamp.timestamp()


from mcptap.dataio import analyze, cost, export_log, import_log, open_db, operations  # noqa: E402,F401


# -- reading in chunks, typed as they come ------------------------------------------------------

def _categories(values: Iterable) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(sorted(v for v in values if v is not None))


def _typed(part: pd.DataFrame, dtypes: dict) -> pd.DataFrame:
    for column, dtype in dtypes.items():
        if column not in part:
            continue
        if dtype == "datetime":
            part[column] = pd.to_datetime(part[column], unit="s", utc=True)
        else:
            part[column] = part[column].astype(dtype)
    return part


def _read(conn: sqlite3.Connection, sql: str, params: list, columns: list[str], dtypes: dict) -> pd.DataFrame:
    parts = [_typed(part, dtypes) for part in pd.read_sql_query(sql, conn, params=params, chunksize=CHUNK_ROWS)]
    if not parts:
        return _typed(pd.DataFrame({c: pd.Series(dtype="object") for c in columns}), dtypes)
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return frame[columns]


def _pick(asked: Iterable[str] | None, known: list[str], default: list[str]) -> list[str]:
    columns = list(asked) if asked is not None else default
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise ValueError(f"unknown columns {unknown}; known: {known}")
    return columns


# -- the tables ---------------------------------------------------------------------------------

def sessions(db: str | sqlite3.Connection) -> pd.DataFrame:
    """One row per session: the recorded row, frame counts, and (once analysed) the revision
    and finding counts."""
    if _parquet(db):
        return dataparquet.sessions(db)
    with _conn(db, ("sessions", "frames", "analyses")) as conn:
        sql = queries.sessions_overview(analysed=store.has_table(conn, "analyses"),
                                        run=store.has_column(conn, "sessions", "run"))
        frame = pd.read_sql_query(sql, conn)
        end = frame["ended_at"].where(frame["ended_at"].notna(), frame["last_ts"])
        frame["duration_s"] = (end - frame["started_at"]).astype("float64")
        frame = frame.drop(columns=["last_ts"])
        for column in ("started_at", "ended_at"):
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
        frame["transport"] = frame["transport"].astype("category")
        for column in ("frames", "exit_status", "errors", "warnings", "infos"):
            frame[column] = frame[column].astype("Int64")
    return frame


def _read_by_session(conn: sqlite3.Connection, sql: str, params: list, ids: list[str], columns: list[str],
                     dtypes: dict, coded: Sequence[str]) -> pd.DataFrame:
    """`sql` (its first parameter the session id) run per session, in chunks; the session id and
    the `coded` columns come back as categorical codes."""
    session_dtype = dtypes["session_id"]
    position = {sid: i for i, sid in enumerate(session_dtype.categories)}
    parts = []
    for sid in ids:
        for part in pd.read_sql_query(sql, conn, params=[sid, *params], chunksize=CHUNK_ROWS):
            for column in coded:
                part[column] = pd.Categorical.from_codes(part[column].to_numpy(dtype="int64"), dtype=dtypes[column])
            if "session_id" in columns:
                part["session_id"] = pd.Categorical.from_codes(np.full(len(part), position[sid]), dtype=session_dtype)
            parts.append(_typed(part, {k: v for k, v in dtypes.items() if k not in coded and k != "session_id"}))
    if not parts:
        return _typed(pd.DataFrame({c: pd.Series(dtype="object") for c in columns}), dtypes)
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return frame[columns]


def frames(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None, end=None,
           columns: Iterable[str] | None = None, filter: str | None = None) -> pd.DataFrame:
    """Frames in (session, seq) order, sessions by start; without their text unless `columns`
    names `raw` (str when the frame is UTF-8, else bytes: the exact bytes either way)."""
    columns = _pick(columns, FRAME_COLUMNS, [c for c in FRAME_COLUMNS if c != "raw"])
    if _parquet(db, filter):
        return dataparquet.frames(db, columns, session=session, start=start, end=end)
    with _conn(db, ("sessions", "frames")) as conn:
        ids = _sessions_filter(conn, session) or store.session_ids(conn)
        sql, params = queries.frames_of_session(columns, queries.frame_columns(conn), DIRECTIONS, _seconds(start),
                                                _seconds(end))
        dtypes = {"session_id": _categories(store.session_ids(conn)), "ts": "datetime",
                  "direction": pd.CategoricalDtype(DIRECTIONS), "incomplete": "bool"}
        coded = [c for c in ("direction",) if c in columns]
        if filter is None:
            return _read_by_session(conn, sql, params, ids, columns, dtypes, coded)
        keep = _selected(db, conn, filter, ids)
        ids = [sid for sid in ids if sid in keep]
        asked = columns
        columns = list(dict.fromkeys([*columns, "session_id", "seq"]))
        sql, params = queries.frames_of_session(columns, queries.frame_columns(conn), DIRECTIONS, _seconds(start),
                                                _seconds(end))
        if not ids:
            return pd.DataFrame(columns=asked)
        frame = _read_by_session(conn, sql, params, ids, columns, dtypes, coded)
        return _kept(frame, keep, "seq")[asked].reset_index(drop=True)


def messages(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None, end=None,
             columns: Iterable[str] | None = None, filter: str | None = None) -> pd.DataFrame:
    """What `mcptap analyze` made of each frame: one row per frame (`idx` missing) and per batch
    element, with its kind, id (JSON text), method, the frame it pairs with and the latency, the
    frame's time, and `tool_error`: an answer to tools/call whose result says `isError: true` (the
    call failed, though JSON-RPC-wise it was answered; those frames are read to tell); `operation`,
    `step` and `operation_latency_s` as `operations()` has them, in sessions whose requests may join
    (an input_required round, a task; missing elsewhere, and on a Parquet dataset)."""
    columns = _pick(columns, MESSAGE_COLUMNS, MESSAGE_COLUMNS)
    added = [c for c in ("tool_error", *JOIN_COLUMNS) if c in columns]
    if _parquet(db, filter):
        read = dataparquet.messages(db, [c for c in columns if c not in JOIN_COLUMNS], session=session, start=start,
                                    end=end)
        latency_rows.blank_operations(read, [c for c in JOIN_COLUMNS if c in columns])
        return read[columns]
    if not added:
        return _messages(db, session, start, end, columns, filter)
    keys = [c for c in ("session_id", "frame_seq", "idx") if c not in columns]
    read = _messages(db, session, start, end, [c for c in columns if c not in added] + keys, filter)
    with _conn(db, ("sessions", "frames", "messages")) as conn:
        ids = _sessions_filter(conn, session)
        if "tool_error" in columns:
            latency_rows.mark_tool_errors(read, tool_errors(conn, ids) if not read.empty else set())
        if any(c in columns for c in JOIN_COLUMNS):
            latency_rows.mark_operations(read, _members(conn, ids) if not read.empty else {})
    return read[columns]


def _members(conn: sqlite3.Connection, ids: list[str] | None) -> dict:
    from mcptap.engine import joined

    return joined.operation_members(conn, ids)


def tool_errors(conn: sqlite3.Connection, ids: list[str] | None = None) -> set[tuple[str, int, int | None]]:
    """(session id, frame, batch element or None) of every answer to tools/call whose result says
    `isError: true`, by the analysis' own test (analyzer/analysis/statistics.py `tool_error`)."""
    from mcptap.analysis.statistics import TOOL_CALL, tool_error

    if not store.has_table(conn, "messages"):
        return set()
    sql, params = queries.tool_answers(ids)
    found = set()
    for sid, seq, idx, raw in conn.execute(sql, params or ()):
        value = jsonwire.parse(raw).value
        if idx is not None:
            value = value[idx] if type(value) is list and idx < len(value) else None
        if tool_error(TOOL_CALL, value):
            found.add((sid, seq, idx))
    return found


def _messages(db, session, start, end, columns: list[str], filter: str | None = None) -> pd.DataFrame:
    with _conn(db, ("sessions", "frames", "messages")) as conn:
        if not store.has_table(conn, "messages"):
            return _read(conn, queries.EMPTY, [], columns, {})
        ids = _sessions_filter(conn, session) or store.session_ids(conn)
        method_dtype = _categories(queries.distinct(conn, "messages", "method"))
        queries.number_methods(conn, list(method_dtype.categories))
        sql, params = queries.messages_of_session(columns, DIRECTIONS, KINDS, _seconds(start), _seconds(end))
        dtypes = {"session_id": _categories(store.session_ids(conn)), "ts": "datetime",
                  "direction": pd.CategoricalDtype(DIRECTIONS), "kind": pd.CategoricalDtype(KINDS),
                  "method": method_dtype, "idx": "Int64", "paired_frame": "Int64", "latency_s": "float64"}
        coded = [c for c in ("direction", "kind", "method") if c in columns]
        frame = _read_by_session(conn, sql, params, ids, columns, dtypes, coded)
        if filter is None:
            return frame
        return _kept(frame, _selected(db, conn, filter, ids), "frame_seq").reset_index(drop=True)


def findings(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None, end=None,
             severity: str | Sequence[str] | None = None, code: str | Sequence[str] | None = None,
             filter: str | None = None) -> pd.DataFrame:
    """The findings of `mcptap analyze`, with the time of the frame each points at."""
    if _parquet(db, filter):
        return dataparquet.findings(db, FINDING_COLUMNS, session=session, start=start, end=end, severity=severity,
                                    code=code)
    with _conn(db, ("sessions", "frames", "findings")) as conn:
        if not store.has_table(conn, "findings"):
            return _read(conn, queries.EMPTY, [], FINDING_COLUMNS, {})
        filters = {column: [wanted] if isinstance(wanted, str) else list(wanted)
                   for column, wanted in (("severity", severity), ("code", code)) if wanted is not None}
        sql, params = queries.findings_with_time(_sessions_filter(conn, session), _seconds(start), _seconds(end),
                                                 filters)
        dtypes = {"session_id": _categories(store.session_ids(conn)), "ts": "datetime",
                  "code": _categories(queries.distinct(conn, "findings", "code")),
                  "severity": pd.CategoricalDtype(SEVERITIES), "frame_seq": "Int64", "idx": "Int64",
                  "related_frame": "Int64"}
        frame = _read(conn, sql, params, FINDING_COLUMNS, dtypes)
        if filter is None:
            return frame
        return _kept(frame, _selected(db, conn, filter, _sessions_filter(conn, session)),
                     "frame_seq").reset_index(drop=True)


def exchanges(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None,
              end=None) -> pd.DataFrame:
    """HTTP exchanges (empty for a database with none): method, URL, status, the MCP headers,
    timings (datetimes), event counts, outcome; headers stay JSON text (parse on demand); `role`
    names an exchange that is not MCP (auth-discovery, auth-register, auth-authorize, auth-token,
    auth-challenge, http-error), with its bodies (credentials redacted) and what `mcptap proxy`
    rewrote (`rewritten`, JSON)."""
    if _parquet(db):
        return dataparquet.exchanges(db, session=session, start=start, end=end)
    with _conn(db, ("sessions", "exchanges")) as conn:
        if not store.has_table(conn, "exchanges"):
            return pd.DataFrame()
        sql, params = queries.exchanges_in(_sessions_filter(conn, session), _seconds(start), _seconds(end))
        frame = pd.read_sql_query(sql, conn, params=params)
        for column in ("started_at", "request_end", "response_at", "ended_at"):
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
        frame["status"] = frame["status"].astype("Int64")
        frame["method"] = frame["method"].astype("category")
    return frame


def _selected(db, conn: sqlite3.Connection, text: str, ids: list[str] | None) -> dict[str, set[int]]:
    """{session: seqs} a display filter selects: through the engine (analysing sessions not yet
    analysed) for a path, straight over an open connection."""
    if isinstance(db, sqlite3.Connection):
        from mcptap.store import filterlang, filtersql

        out: dict[str, set[int]] = {}
        for sid, seq in filtersql.frames(conn, filterlang.parse(text), ids):
            out.setdefault(sid, set()).add(seq)
        return out
    from mcptap.engine import selection

    return selection.select(str(db), text, ids)


def _kept(frame: pd.DataFrame, keep: dict[str, set[int]], seq_column: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    pairs = zip(frame["session_id"].astype(str), frame[seq_column])
    return frame[[seq in keep.get(sid, ()) for sid, seq in pairs]]


def latency(source, *, session: str | Sequence[str] | None = None) -> pd.DataFrame:
    """Per method, Wireshark's service response time, as `mcptap analyze` prints it: calls, errors
    (JSON-RPC error answers), tool errors (tools/call results with `isError: true`; from a
    database, or a frame with `tool_error`), unanswered, and the p50, p95 and max latency in
    seconds (`p50_s`, `p95_s`, `max_s`, as in the JSON report). `source`: a database (path or
    connection; `session` narrows it), a `messages()` frame or an `operations()` frame. Counted by
    operation whatever the source (analysis/logical_operations.py `counted`): an input_required request and
    its retries, or a task, are one call timed from the first request to the answer that ends it (a
    task's polls: calls of their own too). Without `operation` (Parquet) each request is apart."""
    if not isinstance(source, pd.DataFrame):
        source = _latency_rows(source, session)
    if "outcome" in source.columns and "operation" in source.columns:
        return latency_rows.of_operations(source)
    return latency_rows.of_messages(source)


def _latency_rows(db, session) -> pd.DataFrame:
    """The messages rows latency reads of a database (requests, error answers, every answer of a
    session whose requests may join), with tool_error and the joined-operation columns, in one
    query: messages() reads session by session, which thousands of small sessions made take a
    minute."""
    with _conn(db, ("sessions", "frames", "messages")) as conn:
        if not store.has_table(conn, "messages"):
            return pd.DataFrame(columns=["session_id", "frame_seq", "idx", "kind", "method", "paired_frame",
                                         "latency_s", "tool_error", *JOIN_COLUMNS])
        ids = _sessions_filter(conn, session)
        members = _members(conn, ids)
        sql, params = queries.requests_and_errors(ids, sorted(members))
        rows = pd.read_sql_query(sql, conn, params=params, dtype={"paired_frame": "Int64", "latency_s": "float64",
                                                                  "idx": "Int64"})
        failed = tool_errors(conn, ids)
        extra = [(s, f, i) for s, f, i in failed if s not in members]  # tool error answers not read above
        if extra:
            rows = pd.concat([rows, pd.DataFrame({"session_id": [e[0] for e in extra], "frame_seq": [e[1] for e in extra],
                                                  "idx": pd.array([e[2] for e in extra], dtype="Int64"),
                                                  "kind": "response", "method": "tools/call"})], ignore_index=True)
        latency_rows.mark_tool_errors(rows, failed)
        latency_rows.mark_operations(rows, members)
    return rows


def raw(db: str | sqlite3.Connection, session: str, seq: int) -> str | bytes:
    """One frame's exact text (bytes when it is not UTF-8)."""
    with _conn(db) as conn:
        sid = store.resolve_session(conn, session)
        found = queries.frame_raw(conn, sid, int(seq))
    if found is None:
        raise KeyError(f"no frame {seq} in session {sid}")
    return found


def value(db: str | sqlite3.Connection, session: str, seq: int) -> Any:
    """One frame parsed as the wire said it (duplicate keys and number forms kept: see
    analyzer/wire/jsonwire.py); raises ValueError when it is not JSON."""
    parsed = jsonwire.parse(raw(db, session, seq))
    if parsed.error is not None:
        raise ValueError(parsed.error)
    return parsed.value


def parse(column: pd.Series) -> pd.Series:
    """A `raw` column parsed, element by element (None where a frame is not JSON), as Python
    objects: mapped over an object column, never handed to a pyarrow-backed string column to be
    cast back (pandas 3 with pyarrow installed: a deeply nested value would overflow its stack)."""
    return column.astype(object).map(lambda text: jsonwire.parse(text).value, na_action="ignore")

