"""A stored session's logical operations (analyzer/analysis/logical_operations.py), read from the store only
for a session whose analysis saw some (`may_join`): its operations
findings, which the job stores beside its other findings, and the service response time records
of the methods that start joined operations, counted by operation; and each frame's place in a
joined operation, for the transcript."""

from __future__ import annotations

import sqlite3

from mcptap import store
from mcptap.analysis import logical_operations as logical, mcp, paired
from mcptap.analysis.messages import Finding


def judge_session(conn: sqlite3.Connection, sid: str, revision: str | None, policy=None,
                  joins: bool = True) -> tuple[list[Finding], dict[str, dict]]:
    """The operations findings of one session (input_required rounds and their retries, tasks),
    and the service response time records of the methods that start joined operations, counted
    by operation (analysis/logical_operations.py method_stats: they replace the session's own). `joins`:
    whether the session's analysis saw operations to join (`may_join`); no frame is read without."""
    if not joins or not mcp.revision_at_least(revision, "2025-11-25"):
        return [], {}
    return logical.judge(sid, _Frames(conn, sid), revision, policy)


class _Frames:
    """A session's raw frames, read from the store again each time they are iterated."""

    def __init__(self, conn: sqlite3.Connection, sid: str):
        self.conn, self.sid = conn, sid

    def __iter__(self):
        return iter(store.iter_raw_frames(self.conn, self.sid))


def may_join(analysis) -> bool:
    """Whether a session's analysis (a SessionAnalysis, ended) saw operations to join: an answer
    that said input_required, or a tasks/ request."""
    return analysis.joins or any(type(m) is str and m.startswith("tasks/") for m in analysis.method_stats)


def frame_members(conn: sqlite3.Connection, sid: str, summary: dict, rows: list,
                  findings: list) -> dict[int, logical.Member]:
    """Frame seq -> its place in a joined operation (analysis/logical_operations.py members), from the
    session's frames and its analysis (its summary from engine.job.analyze_session, whose `joins`
    says whether it has any; message rows, findings); empty when it has none."""
    if not summary.get("joins") or not mcp.revision_at_least(summary.get("revision"), "2025-11-25"):
        return {}
    ops = paired.operations(sid, store.iter_raw_frames(conn, sid), rows, findings)
    return logical.members(logical.join(ops))


def operation_members(conn: sqlite3.Connection, ids: list[str] | None) -> dict[str, dict[int, logical.Member]]:
    """Session -> frame seq -> its place in a joined operation, for the analysed sessions among
    these (None: all) whose requests may join (store.queries.joinable_sessions): what the pandas
    API and the report read to count an operation once, as `mcptap analyze` does."""
    from mcptap.store import queries

    revisions = [r for r in mcp.KNOWN_REVISIONS if mcp.revision_at_least(r, "2025-11-25")]
    if not store.has_table(conn, "analyses"):
        return {}
    out = {}
    for sid in queries.joinable_sessions(conn, ids, revisions):
        found = logical.session_members(sid, list(store.iter_raw_frames(conn, sid)))
        if found:
            out[sid] = found
    return out
