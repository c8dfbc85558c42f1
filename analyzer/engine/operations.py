"""The paired view of a stored session (analyzer/analysis/paired.py): the session analysed in
memory, nothing stored, and its frames joined with the analysis' pairs into operations, each
annotated with the logical operation it belongs to (analyzer/analysis/operations.py), for the
exports, the report and the pandas API alike; and a session's operations findings, which the job
stores beside its other findings."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from mcptap import store
from mcptap.analysis import mcp, operations as logical, paired


@dataclass
class SessionView:
    """A session as the exports see it: its stored row, the analysis summary (revision, finding
    counts), its HTTP exchanges (empty on stdio), its findings and its operations (an iterator:
    read once), each with its logical operation."""

    session: dict
    summary: dict
    exchanges: list[dict]
    findings: list[tuple]
    operations: Iterator[paired.Operation]


def session_view(conn: sqlite3.Connection, session_id: str, *, fallback_revision: str | None = None,
                 policy=None) -> SessionView:
    """`session_id` analysed in memory and paired: a SessionView."""
    from mcptap.engine.job import analyze_session

    summary, rows, findings = analyze_session(conn, session_id, fallback_revision=fallback_revision, policy=policy)
    frames = ((f.seq, f.ts, f.direction, f.raw) for f in store.iter_frames(conn, session_id))
    return SessionView(store.get_session(conn, session_id), summary, store.session_exchanges(conn, session_id),
                       findings, logical.join(paired.operations(session_id, frames, rows, findings)))


def judge_session(conn: sqlite3.Connection, sid: str, revision: str | None, policy=None) -> list[tuple]:
    """The operations findings of one session (input_required rounds and their retries, tasks):
    nothing to do, and no frame read into Python, unless the session's revision has them and a
    frame mentions them (analysis/operations.py NEEDLES, filtered in SQLite)."""
    if not mcp.revision_at_least(revision, "2025-11-25"):
        return []
    if next(iter(store.frames_mentioning(conn, sid, logical.NEEDLES)), None) is None:
        return []
    return logical.findings(sid, list(store.iter_raw_frames(conn, sid)), revision, policy)
