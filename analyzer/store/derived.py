"""The SQL of the tables `mcptap analyze` writes (messages, findings, analyses), session by
session, never the recorded ones."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from itertools import chain

from mcptap.store import migrations
from mcptap.store.connections import has_table, write_transaction

_INSERT_MESSAGE = ("INSERT INTO messages (session_id, frame_seq, idx, direction, kind, id, method, paired_frame, "
                   "latency_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
ROWS_PER_INSERT = 100
"""Messages rows written by one statement (`INSERT ... VALUES (...), (...), ...`): SQLite's work
per statement, and the sqlite3 module's per step, shared by that many rows."""
_INSERT_MESSAGES = _INSERT_MESSAGE + ", (?, ?, ?, ?, ?, ?, ?, ?, ?)" * (ROWS_PER_INSERT - 1)
# The common case, a hundred rows of one session for whole frames (idx NULL): the session id bound
# once (?1) and idx not bound at all (its NULL is the column's default). Binding a text copies it,
# and the sqlite3 module of Python 3.11 binds a None through its adapter registry (about 1,200
# instructions each): two of a row's nine cells cost a fifth of writing it.
_INSERT_FRAME_MESSAGES = (
    "INSERT INTO messages (session_id, frame_seq, direction, kind, id, method, paired_frame, latency_s) VALUES "
    + ", ".join("(?1, " + ", ".join(f"?{2 + 7 * row + cell}" for cell in range(7)) + ")"
                for row in range(ROWS_PER_INSERT)))
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
    """`messages` rows of 9 cells each (MessageRow), `findings` rows of 7 (FindingRow). The order
    of the messages rows within one call is not kept (a row is found by its session, frame and
    element): whole frames' rows go first, a hundred of one session at a time."""
    framed = [row for row in messages if row[2] is None]
    others = [row for row in messages if row[2] is not None] if len(framed) < len(messages) else []
    whole = len(framed) - len(framed) % ROWS_PER_INSERT
    flat = chain.from_iterable
    one_session = []
    for i in range(0, whole, ROWS_PER_INSERT):
        rows = framed[i:i + ROWS_PER_INSERT]
        cells = list(flat(rows))
        session_ids = cells[::9]
        if session_ids.count(session_ids[0]) == ROWS_PER_INSERT:  # all one session's
            del cells[::9]  # bound once, as ?1
            del cells[1::8]  # the idx cells (NULL)
            cells.insert(0, session_ids[0])
            one_session.append(cells)
        else:
            others += rows
    if one_session:
        conn.executemany(_INSERT_FRAME_MESSAGES, one_session)
    others += framed[whole:]
    whole = len(others) - len(others) % ROWS_PER_INSERT
    if whole:
        conn.executemany(_INSERT_MESSAGES, (tuple(flat(others[i:i + ROWS_PER_INSERT]))
                                            for i in range(0, whole, ROWS_PER_INSERT)))
    if whole < len(others):
        conn.executemany(_INSERT_MESSAGE, others[whole:])
    if findings:
        conn.executemany(_INSERT_FINDING, findings)


def write_finding_groups(conn: sqlite3.Connection, groups: dict[str, str]) -> None:
    """Every finding code's group (code -> group), replacing what an earlier analysis wrote, in
    one transaction."""
    with write_transaction(conn):
        conn.execute("DELETE FROM finding_groups")
        conn.executemany("INSERT INTO finding_groups (code, grp) VALUES (?, ?)", sorted(groups.items()))


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
    for statement in migrations.DERIVED_INDEXES:
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
