"""The SQL of the tables `mcptap analyze` writes (messages, findings, analyses), session by
session, never the recorded ones."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence

from mcptap.store import schema
from mcptap.store.connections import has_table, write_transaction

_INSERT_MESSAGE = ("INSERT INTO messages (session_id, frame_seq, idx, direction, kind, id, method, paired_frame, "
                   "latency_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_FINDING = ("INSERT INTO findings (session_id, frame_seq, idx, code, severity, message, related_frame) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)")


def clear_analysis(conn: sqlite3.Connection, session_id: str) -> None:
    for table in ("messages", "findings", "analyses"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))


def clear_analyses(conn: sqlite3.Connection, session_ids: Sequence[str]) -> None:
    """Drop the derived rows of many sessions in one transaction (one pass per table)."""
    with write_transaction(conn):
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS clearing (id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM clearing")
        conn.executemany("INSERT OR IGNORE INTO clearing VALUES (?)", ((s,) for s in session_ids))
        for table in ("messages", "findings", "analyses"):
            conn.execute(f"DELETE FROM {table} WHERE session_id IN (SELECT id FROM clearing)")


def insert_analysis_rows(conn: sqlite3.Connection, messages: Sequence[Sequence], findings: Sequence[Sequence]) -> None:
    if messages:
        conn.executemany(_INSERT_MESSAGE, messages)
    if findings:
        conn.executemany(_INSERT_FINDING, findings)


def insert_analysis_summary(conn: sqlite3.Connection, summary: dict, analyzed_at: float, analyzer: str) -> None:
    counts = summary["findings"]
    conn.execute(
        "INSERT OR REPLACE INTO analyses (session_id, revision, revision_source, frames, kinds, errors, warnings, "
        "infos, analyzed_at, analyzer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (summary["id"], summary["revision"], summary["revision_source"], summary["frames"],
         json.dumps(summary["kinds"], sort_keys=True), counts["error"], counts["warning"], counts["info"],
         analyzed_at, analyzer),
    )


def drop_message_index(conn: sqlite3.Connection) -> None:
    """Before a large analysis: an index built once after the rows costs less than one kept
    up to date row by row (`ensure_message_indexes` puts it back)."""
    conn.execute("DROP INDEX IF EXISTS messages_by_frame")


def ensure_message_indexes(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA threads = {os.cpu_count() or 1}")  # SQLite sorts the index's keys on all of them
    for statement in schema.DERIVED_INDEXES:
        conn.execute(statement)


def analysis_summaries(conn: sqlite3.Connection) -> dict[str, dict]:
    """Stored analysis summaries by session id ({} when nothing was analysed yet)."""
    if not has_table(conn, "analyses"):
        return {}
    conn.row_factory = sqlite3.Row
    try:
        return {r["session_id"]: dict(r) for r in conn.execute("SELECT * FROM analyses")}
    finally:
        conn.row_factory = None
