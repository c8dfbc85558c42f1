"""The pandas API: a recording's tables as DataFrames, for notebooks and scripts.

    import mcptap.data as mt

    mt.sessions("mcp.db")                                   # one row per session
    mt.frames("mcp.db", session="0193b2", columns=["seq", "ts", "direction", "size"])
    mt.messages("mcp.db", start="2026-11-30 10:00", end="2026-11-30 10:05")
    mt.findings("mcp.db", severity="error")
    mt.exchanges("mcp.db")                                  # HTTP exchanges
    mt.latency(mt.messages("mcp.db"))                       # per method: calls, errors, p50, p95, max
    mt.raw("mcp.db", session, 4012)                         # a frame's exact text (bytes if not UTF-8)
    mt.value("mcp.db", session, 4012)                       # ... parsed, exactly (analyzer/wire/jsonwire.py)

Timestamps are timezone-aware datetimes (UTC), kinds, methods, codes, directions and session ids
categoricals. Frames are read without their text unless it is asked for (`columns=[..., "raw"]`),
and JSON is parsed only on demand (`value`, or `parse` over a column). Everything is read in
chunks of CHUNK_ROWS, filtered in SQL (session, time range, the columns asked for), so a large
file is never loaded whole. `messages` and `findings` come from `mcptap analyze` (empty until
it has run). Any function takes a path or an open sqlite3 connection. A cell of a type its column
does not take (SQLite allows `frames.ts = 'soon'`) is read as it is where pandas takes it, and
raises mcptap.store.cells.BadCell naming it where it would break a loader."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mcptap import store

from mcptap.store import cells, queries

from mcptap.wire import jsonwire

CHUNK_ROWS = 200_000

KINDS = ["request", "notification", "response", "error", "batch", "invalid", "unparseable"]
DIRECTIONS = ["c2s", "s2c"]
SEVERITIES = ["error", "warning", "info"]

FRAME_COLUMNS = ["session_id", "seq", "ts", "direction", "size", "incomplete", "exchange_id", "event_id", "redacted",
                 "raw"]
MESSAGE_COLUMNS = ["session_id", "frame_seq", "idx", "ts", "direction", "kind", "id", "method", "paired_frame",
                   "latency_s"]
FINDING_COLUMNS = ["session_id", "frame_seq", "idx", "ts", "code", "severity", "message", "related_frame"]


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
    if session is None:
        return None
    refs = [session] if isinstance(session, str) else list(session)
    return [store.resolve_session(conn, ref) for ref in refs]


def _seconds(when: Any) -> float | None:
    if when is None:
        return None
    if isinstance(when, (int, float)):
        return float(when)
    stamp = pd.Timestamp(when)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return stamp.timestamp()


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
    with _conn(db, ("sessions", "frames", "analyses")) as conn:
        sql = queries.sessions_overview(analysed=store.has_table(conn, "analyses"))
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
           columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Frames in (session, seq) order, sessions by start; without their text unless `columns`
    names `raw` (str when the frame is UTF-8, else bytes: the exact bytes either way)."""
    columns = _pick(columns, FRAME_COLUMNS, [c for c in FRAME_COLUMNS if c != "raw"])
    with _conn(db, ("sessions", "frames")) as conn:
        ids = _sessions_filter(conn, session) or store.session_ids(conn)
        sql, params = queries.frames_of_session(columns, queries.frame_columns(conn), DIRECTIONS, _seconds(start),
                                                _seconds(end))
        dtypes = {"session_id": _categories(store.session_ids(conn)), "ts": "datetime",
                  "direction": pd.CategoricalDtype(DIRECTIONS), "incomplete": "bool"}
        coded = [c for c in ("direction",) if c in columns]
        return _read_by_session(conn, sql, params, ids, columns, dtypes, coded)


def messages(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None, end=None,
             columns: Iterable[str] | None = None) -> pd.DataFrame:
    """What `mcptap analyze` made of each frame: one row per frame (`idx` missing) and per batch
    element, with its kind, id (JSON text), method, the frame it pairs with and the latency, and
    the frame's time."""
    columns = _pick(columns, MESSAGE_COLUMNS, MESSAGE_COLUMNS)
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
        return _read_by_session(conn, sql, params, ids, columns, dtypes, coded)


def findings(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None, end=None,
             severity: str | Sequence[str] | None = None, code: str | Sequence[str] | None = None) -> pd.DataFrame:
    """The findings of `mcptap analyze`, with the time of the frame each points at."""
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
        return _read(conn, sql, params, FINDING_COLUMNS, dtypes)


def exchanges(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None, start=None,
              end=None) -> pd.DataFrame:
    """HTTP exchanges (empty for a database with none): method, URL, status, the MCP headers,
    timings (datetimes), event counts, outcome; headers stay JSON text (parse on demand)."""
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


def latency(msgs: pd.DataFrame) -> pd.DataFrame:
    """Per method, Wireshark's service response time: calls, errors, unanswered, p50, p95 and
    max latency in ms, from a `messages` frame (requests and their answers)."""
    requests = msgs[msgs["kind"] == "request"]
    errors = msgs[msgs["kind"] == "error"].groupby("method", observed=True).size()
    grouped = requests.groupby("method", observed=True)
    table = pd.DataFrame({
        "calls": grouped.size(),
        "errors": errors.reindex(grouped.size().index, fill_value=0),
        "unanswered": grouped["paired_frame"].apply(lambda s: int(s.isna().sum())),
        "p50_ms": grouped["latency_s"].quantile(0.5) * 1e3,
        "p95_ms": grouped["latency_s"].quantile(0.95) * 1e3,
        "max_ms": grouped["latency_s"].max() * 1e3,
    })
    return table.sort_values("calls", ascending=False)


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
    """A `raw` column parsed, element by element (None where a frame is not JSON)."""
    return column.map(lambda text: jsonwire.parse(text).value, na_action="ignore")


def cost(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None) -> pd.DataFrame:
    """What each session's server costs in a model's context (`mcptap cost`): one row per
    definition (kind instructions, tool, prompt, resource, resource template: bytes, tokens,
    model_tokens) and per tool's results (kind result: count, bytes and tokens p50 and max), with
    the session, server, version and the tokenizer (`attrs["tokenizer"]`, `attrs["estimate"]`)."""
    from mcptap.engine import definitions

    with _conn(db, ("sessions", "frames")) as conn:
        named = [session] if isinstance(session, str) else session
        ids = None if named is None else list(dict.fromkeys(store.resolve_session(conn, s) for s in named))
        figures = definitions.cost_report(conn, ids)
    rows = []
    kinds = (("tools", "tool"), ("prompts", "prompt"), ("resources", "resource"),
             ("resourceTemplates", "resource template"))
    for s in figures["sessions"]:
        where = {"session_id": s["session"], "server": s["server"], "version": s["version"]}
        defs = s["definitions"]
        if defs["instructions"] is not None:
            m = defs["instructions"]
            rows.append({**where, "kind": "instructions", "name": None, **m, "model_tokens": m["tokens"]})
        for key, kind in kinds:
            for d in defs.get(key, ()):
                rows.append({**where, "kind": kind, "name": d["name"], "bytes": d["bytes"], "tokens": d["tokens"],
                             "model_tokens": d.get("model_tokens", d["tokens"])})
        for r in s["results"]:
            rows.append({**where, "kind": "result", "name": r["tool"], "count": r["count"],
                         "bytes_p50": r["bytes_p50"], "bytes_max": r["bytes_max"], "tokens_p50": r["tokens_p50"],
                         "tokens_max": r["tokens_max"]})
    columns = ["session_id", "server", "version", "kind", "name", "bytes", "tokens", "model_tokens", "count",
               "bytes_p50", "bytes_max", "tokens_p50", "tokens_max"]
    table = pd.DataFrame(rows, columns=columns)
    numbers = columns[5:]
    table[numbers] = table[numbers].astype("Int64")
    table.attrs.update(tokenizer=figures["tokenizer"], estimate=figures["estimate"])
    return table
