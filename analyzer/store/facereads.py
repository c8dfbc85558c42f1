"""The MCP face's reads (`mcptap mcp`, analyzer/mcpface/): pages of findings with their session's
order, and a session's messages counted by kind and method. Everything else it shows comes from
the viewer's reads (analyzer/store/viewpages.py)."""

from __future__ import annotations

import sqlite3

from mcptap.store.connections import has_table

FINDING_COLUMNS = ("session_id", "frame_seq", "idx", "code", "severity", "message", "related_frame")


def findings_page(conn: sqlite3.Connection, *, session_id: str | None, severity: str | None, code: str | None,
                  offset: int, limit: int) -> tuple[int, list[tuple]]:
    """(how many findings match, the `limit` from the `offset`-th): FINDING_COLUMNS, in the
    sessions' start order, then frame order."""
    if not has_table(conn, "findings"):
        return 0, []
    tests, params = [], []
    for column, value in (("g.session_id", session_id), ("g.severity", severity), ("g.code", code)):
        if value is not None:
            tests.append(f"{column} = ?")
            params.append(value)
    where = f" WHERE {' AND '.join(tests)}" if tests else ""
    total = conn.execute(f"SELECT count(*) FROM findings g{where}", params).fetchone()[0]
    rows = conn.execute(
        f"SELECT {', '.join('g.' + c for c in FINDING_COLUMNS)} FROM findings g "
        f"LEFT JOIN sessions s ON s.id = g.session_id{where} "
        "ORDER BY s.started_at, g.session_id, g.frame_seq, g.rowid LIMIT ? OFFSET ?",
        (*params, limit, offset)).fetchall()
    return total, rows


def message_counts(conn: sqlite3.Connection, session_id: str) -> list[tuple]:
    """(direction, kind, method, count, mean latency in seconds) of the session's messages."""
    if not has_table(conn, "messages"):
        return []
    return conn.execute(
        "SELECT direction, kind, method, count(*), avg(latency_s) FROM messages WHERE session_id = ? "
        "GROUP BY direction, kind, method ORDER BY count(*) DESC, method", (session_id,)).fetchall()


def finding_counts(conn: sqlite3.Connection, session_id: str) -> list[tuple]:
    """(severity, code, count) of the session's findings, most first."""
    if not has_table(conn, "findings"):
        return []
    return conn.execute("SELECT severity, code, count(*) FROM findings WHERE session_id = ? "
                        "GROUP BY severity, code ORDER BY count(*) DESC, code", (session_id,)).fetchall()
