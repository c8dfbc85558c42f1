"""The paired view of a stored session (analyzer/analysis/paired.py): the session analysed in
memory, nothing stored, and its frames joined with the analysis' pairs into operations, each
annotated with the logical operation it belongs to (analyzer/analysis/logical_operations.py), for the
exports, the report and the pandas API alike."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from mcptap import store
from mcptap.analysis import logical_operations as logical, paired
from mcptap.analysis.messages import Finding
from mcptap.engine.job import analyze_session


@dataclass
class SessionView:
    """A session as the exports see it: its stored row, the analysis summary (revision, finding
    counts), its HTTP exchanges (empty on stdio), its findings and its operations (an iterator:
    read once), each with its logical operation."""

    session: dict
    summary: dict
    exchanges: list[dict]
    findings: list[Finding]
    operations: Iterator[paired.Operation]


def session_view(conn: sqlite3.Connection, session_id: str, *, fallback_revision: str | None = None,
                 policy=None) -> SessionView:
    """`session_id` analysed in memory and paired: a SessionView."""
    summary, rows, findings = analyze_session(conn, session_id, fallback_revision=fallback_revision, policy=policy)
    frames = ((f.seq, f.ts, f.direction, f.raw) for f in store.iter_frames(conn, session_id))
    return SessionView(store.get_session(conn, session_id), summary, store.session_exchanges(conn, session_id),
                       findings, logical.join(paired.operations(session_id, frames, rows, findings)))
