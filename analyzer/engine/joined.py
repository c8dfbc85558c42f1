"""A stored session's logical operations (analyzer/analysis/operations.py): its operations
findings, which the job stores beside its other findings, and the service response time records
of the methods that start joined operations, counted by operation; and each frame's place in a
joined operation, for the transcript."""

from __future__ import annotations

import sqlite3

from mcptap import store
from mcptap.analysis import mcp, operations as logical, paired
from mcptap.analysis.messages import Finding


def judge_session(conn: sqlite3.Connection, sid: str, revision: str | None,
                  policy=None) -> tuple[list[Finding], dict[str, dict]]:
    """The operations findings of one session (input_required rounds and their retries, tasks),
    and the service response time records of the methods that start joined operations, counted
    by operation (analysis/operations.py method_stats: they replace the session's own): nothing to
    do, and no frame read into Python, unless the session's revision has them and a frame
    mentions them (analysis/operations.py NEEDLES, filtered in SQLite)."""
    if not has_operations(conn, sid, revision):
        return [], {}
    return logical.judge(sid, list(store.iter_raw_frames(conn, sid)), revision, policy)


def has_operations(conn: sqlite3.Connection, sid: str, revision: str | None) -> bool:
    """Whether the session may have operations to join: its revision has them (2025-11-25 tasks,
    2026-07-28 input_required) and a frame mentions them (NEEDLES, filtered in SQLite)."""
    return mcp.revision_at_least(revision, "2025-11-25") and \
        next(iter(store.frames_mentioning(conn, sid, logical.NEEDLES)), None) is not None


def frame_members(conn: sqlite3.Connection, sid: str, revision: str | None, rows: list,
                  findings: list) -> dict[int, logical.Member]:
    """Frame seq -> its place in a joined operation (analysis/operations.py members), from the
    session's frames and its analysis (message rows, findings); empty when it has none."""
    if not has_operations(conn, sid, revision):
        return {}
    ops = paired.operations(sid, store.iter_raw_frames(conn, sid), rows, findings)
    return logical.members(logical.join(ops))
