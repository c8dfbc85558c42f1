"""Runs (the sessions one host process started, or one HTTP client's within a window: the `run`
column of `sessions`, written by capture, addons/runs.py): each run with its sessions counted and
summed, the sessions of one run, and which run a reference names (its id, a unique start or end of
it of at least 4 characters, or `@N`, the N-th newest)."""

from __future__ import annotations

import re
import sqlite3

from mcptap.errors import MCPTapError
from mcptap.store.connections import has_column, has_table

NEWEST = re.compile(r"@([1-9][0-9]{0,5})")
MIN_REF = 4


class RunNotFound(MCPTapError):
    """No run, or more than one, answers to a reference."""


def has_runs(conn: sqlite3.Connection) -> bool:
    return has_column(conn, "sessions", "run")


def runs(conn: sqlite3.Connection) -> list[dict]:
    """Every run, oldest first: run, started_at, ended_at (its last session's end or last frame),
    sessions, frames, servers (the sessions' labels, or their commands, in start order), client
    (the first session's `client` cell), and, for the analysed sessions, errors and warnings."""
    if not has_runs(conn):
        return []
    analysed = has_table(conn, "analyses")
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT s.run, min(s.started_at) AS started_at, max(coalesce(s.ended_at, s.started_at)) AS ended_at, "
            "count(*) AS sessions, sum((SELECT count(*) FROM frames f WHERE f.session_id = s.id)) AS frames, "
            "json_group_array(coalesce(s.label, s.upstream, s.command, s.id)) AS servers, "
            "(SELECT c.client FROM sessions c WHERE c.run = s.run ORDER BY c.started_at LIMIT 1) AS client"
            + (", sum(a.errors) AS errors, sum(a.warnings) AS warnings FROM sessions s "
               "LEFT JOIN analyses a ON a.session_id = s.id" if analysed else
               ", NULL AS errors, NULL AS warnings FROM sessions s")
            + " WHERE s.run IS NOT NULL GROUP BY s.run ORDER BY min(s.started_at), s.run").fetchall()
    finally:
        conn.row_factory = None
    return [dict(r) for r in rows]


def run_sessions(conn: sqlite3.Connection, run: str) -> list[str]:
    """The ids of the run's sessions, in start order."""
    return [r[0] for r in conn.execute("SELECT id FROM sessions WHERE run = ? ORDER BY started_at, id", (run,))]


def session_names(conn: sqlite3.Connection, sids: list[str]) -> dict[str, tuple]:
    """{session id: (label, command, upstream)} of these sessions."""
    out = {}
    for sid in sids:
        row = conn.execute("SELECT label, command, upstream FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row is not None:
            out[sid] = tuple(row)
    return out


def resolve_run(conn: sqlite3.Connection, ref: str) -> str:
    """The run `ref` names: its id, a unique start or end of an id (at least 4 characters), or @N."""
    if not has_runs(conn):
        raise RunNotFound(f"no run {ref!r}: this database records no runs (recorded before runs were)")
    ids = [r[0] for r in conn.execute("SELECT run FROM sessions WHERE run IS NOT NULL GROUP BY run "
                                      "ORDER BY min(started_at) DESC, run DESC")]
    if ref in ids:
        return ref
    newest = NEWEST.fullmatch(ref)
    if newest:
        n = int(newest.group(1))
        if n > len(ids):
            raise RunNotFound(f"no run {ref}: the database holds {len(ids)} (try `mcptap runs`)")
        return ids[n - 1]
    found = [r for r in ids if len(ref) >= MIN_REF and (r.startswith(ref) or r.endswith(ref))]
    if len(found) == 1:
        return found[0]
    if not found:
        raise RunNotFound(f"no run {ref!r} (try `mcptap runs`)")
    raise RunNotFound(f"{ref!r} names {len(found)} runs: {', '.join(found[:5])}")
