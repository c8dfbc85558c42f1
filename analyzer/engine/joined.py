"""A stored session's logical operations judged (analyzer/analysis/operations.py): its operations
findings, which the job stores beside its other findings, and the service response time records
of the methods that start joined operations, counted by operation."""

from __future__ import annotations

import sqlite3

from mcptap import store
from mcptap.analysis import mcp, operations as logical


def judge_session(conn: sqlite3.Connection, sid: str, revision: str | None,
                  policy=None) -> tuple[list[tuple], dict[str, dict]]:
    """The operations findings of one session (input_required rounds and their retries, tasks),
    and the service response time records of the methods that start joined operations, counted
    by operation (analysis/operations.py method_stats: they replace the session's own): nothing to
    do, and no frame read into Python, unless the session's revision has them and a frame
    mentions them (analysis/operations.py NEEDLES, filtered in SQLite)."""
    if not mcp.revision_at_least(revision, "2025-11-25"):
        return [], {}
    if next(iter(store.frames_mentioning(conn, sid, logical.NEEDLES)), None) is None:
        return [], {}
    return logical.judge(sid, list(store.iter_raw_frames(conn, sid)), revision, policy)
