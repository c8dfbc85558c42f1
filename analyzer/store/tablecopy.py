"""The store's tables as Arrow record batches and back: a session's rows of each table read in
batches (raw as its exact bytes, `CAST(raw AS BLOB)`), and rows of the same shape written into a
database (raw stored as the store stores it: TEXT when UTF-8 without NUL, else BLOB). What a
Parquet dataset holds (store/dataset.py) and what the fleet engines analyse. Needs pyarrow."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from mcptap.store.connections import has_column, has_table
from mcptap.store.rows import stored_raw

COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "sessions": (("id", "string"), ("transport", "string"), ("label", "string"), ("started_at", "float64"),
                 ("ended_at", "float64"), ("command", "string"), ("upstream", "string"), ("exit_status", "int64"),
                 ("recorder", "string"), ("host", "string"), ("pid", "int64"), ("source", "string"),
                 ("replay_of", "string"), ("run", "string"), ("client", "string")),
    "frames": (("session_id", "string"), ("seq", "int64"), ("ts", "float64"), ("direction", "string"),
               ("raw", "binary"), ("size", "int64"), ("incomplete", "int64"), ("exchange_id", "string"),
               ("event_id", "string"), ("redacted", "string")),
    "stderr_lines": (("session_id", "string"), ("seq", "int64"), ("ts", "float64"), ("raw", "binary"),
                     ("incomplete", "int64")),
    "exchanges": (("id", "string"), ("session_id", "string"), ("method", "string"), ("url", "string"),
                  ("status", "int64"), ("request_type", "string"), ("response_type", "string"),
                  ("mcp_session_id", "string"), ("assigned_session", "string"), ("protocol_version", "string"),
                  ("accept", "string"), ("last_event_id", "string"), ("content_encoding", "string"),
                  ("endpoint", "string"), ("events", "int64"), ("request_headers", "string"),
                  ("response_headers", "string"), ("redacted", "string"), ("started_at", "float64"),
                  ("request_end", "float64"), ("response_at", "float64"), ("ended_at", "float64"),
                  ("outcome", "string"), ("role", "string"), ("request_body", "binary"), ("response_body", "binary"),
                  ("rewritten", "string")),
    "messages": (("session_id", "string"), ("frame_seq", "int64"), ("idx", "int64"), ("direction", "string"),
                 ("kind", "string"), ("id", "string"), ("method", "string"), ("paired_frame", "int64"),
                 ("latency_s", "float64")),
    "findings": (("session_id", "string"), ("frame_seq", "int64"), ("idx", "int64"), ("code", "string"),
                 ("severity", "string"), ("message", "string"), ("related_frame", "int64")),
    "analyses": (("session_id", "string"), ("revision", "string"), ("revision_source", "string"),
                 ("frames", "int64"), ("kinds", "string"), ("errors", "int64"), ("warnings", "int64"),
                 ("infos", "int64"), ("analyzed_at", "float64"), ("analyzer", "string")),
}
"""Every table a dataset holds, its columns and their Arrow types, in order (docs/contract.md,
Parquet datasets): the SQLite tables' columns, nothing added or renamed."""

RECORDED = ("sessions", "frames", "stderr_lines", "exchanges")
DERIVED = ("messages", "findings", "analyses")

ORDER = {"sessions": "", "frames": " ORDER BY seq", "stderr_lines": " ORDER BY seq",
         "exchanges": " ORDER BY started_at, id", "messages": " ORDER BY frame_seq, idx",
         "findings": " ORDER BY rowid", "analyses": ""}

BATCH_ROWS = 20_000
"""Rows to an Arrow record batch read from SQLite (bounds memory whatever a session's size)."""


def arrow_schema(table: str):
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS[table]])


def _key(table: str) -> str:
    return "id" if table == "sessions" else "session_id"


def _select(conn: sqlite3.Connection, table: str) -> str:
    cells = []
    for name, kind in COLUMNS[table]:
        if not has_column(conn, table, name):
            cells.append(f"NULL AS {name}")
        elif kind == "binary":
            cells.append(f"CAST({name} AS BLOB) AS {name}")
        else:
            cells.append(name)
    return f"SELECT {', '.join(cells)} FROM {table} WHERE {_key(table)} = ?{ORDER[table]}"


def session_batches(conn: sqlite3.Connection, table: str, session_id: str) -> Iterator:
    """The session's rows of `table` as Arrow record batches of at most BATCH_ROWS rows (none
    when the database has no such table)."""
    import pyarrow as pa

    if not has_table(conn, table):
        return
    schema = arrow_schema(table)
    cursor = conn.execute(_select(conn, table), (session_id,))
    while rows := cursor.fetchmany(BATCH_ROWS):
        columns = list(zip(*rows))
        yield pa.RecordBatch.from_arrays([pa.array(col, type=field.type) for col, field in zip(columns, schema)],
                                         schema=schema)


def load(conn: sqlite3.Connection, table: str, data) -> None:
    """The rows of an Arrow table (or record batch) of COLUMNS[table]'s shape inserted into the
    database's table, inside the caller's transaction; raw bytes stored as the store stores them."""
    names = [name for name, _ in COLUMNS[table] if name in data.schema.names and has_column(conn, table, name)]
    if not names or data.num_rows == 0:
        return
    columns = [data.column(name).to_pylist() for name in names]
    kinds = dict(COLUMNS[table])
    for i, name in enumerate(names):
        if kinds[name] == "binary":
            columns[i] = [None if raw is None else stored_raw(raw) for raw in columns[i]]
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    conn.executemany(sql, zip(*columns))


def session_ids_of(conn: sqlite3.Connection, refs: Sequence[str] | None) -> list[str]:
    """Every session's id in start order, or those whose ids are in `refs`."""
    rows = conn.execute("SELECT id FROM sessions ORDER BY started_at, id").fetchall()
    ids = [r[0] for r in rows]
    return ids if refs is None else [sid for sid in ids if sid in set(refs)]


def session_starts(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, float]:
    rows = conn.execute("SELECT id, started_at FROM sessions").fetchall()
    wanted = set(ids)
    return {sid: started for sid, started in rows if sid in wanted}
