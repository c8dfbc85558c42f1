"""What the Prometheus metrics count (analyzer/report/metrics.py): for `mcptap view`, a database's
frames and bytes by direction and server, findings by code and severity, and answered requests'
latencies in buckets by method and server; for `mcptap proxy`, the frames one recorder stored since
a row, a bounded number at a time (`frames_after`). A session's server is its label (the name in
the host's config)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mcptap.store.connections import has_table


def frames_by_direction(conn: sqlite3.Connection) -> list[tuple]:
    """(server, direction, frames, bytes), the server "" for a session without a label."""
    return conn.execute("SELECT coalesce(s.label, ''), f.direction, count(*), coalesce(sum(f.size), 0) FROM frames f "
                        "JOIN sessions s ON s.id = f.session_id GROUP BY 1, 2 ORDER BY 1, 2").fetchall()


def findings_by_code(conn: sqlite3.Connection) -> list[tuple]:
    """(server, code, severity, findings) of the analysed sessions."""
    if not has_table(conn, "findings"):
        return []
    return conn.execute("SELECT coalesce(s.label, ''), g.code, g.severity, count(*) FROM findings g "
                        "JOIN sessions s ON s.id = g.session_id GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()


def latency_buckets(conn: sqlite3.Connection, bounds: Sequence[float]) -> list[tuple]:
    """(server, method, bucket, requests, latency sum) of the answered requests: `bucket` is the index
    of the first bound the latency is at most (len(bounds): above the last)."""
    if not has_table(conn, "messages"):
        return []
    case = " ".join(f"WHEN m.latency_s <= {float(b)!r} THEN {k}" for k, b in enumerate(bounds))
    return conn.execute(
        f"SELECT coalesce(s.label, ''), m.method, CASE {case} ELSE {len(bounds)} END AS bucket, count(*), "
        "sum(m.latency_s) FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE m.kind = 'request' AND m.latency_s IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()


def last_frame(conn: sqlite3.Connection) -> int:
    """The rowid of the frame stored last (0: none); a frame stored later has a larger one."""
    return conn.execute("SELECT coalesce(max(rowid), 0) FROM frames").fetchone()[0]


_ENVELOPE = ("CASE WHEN typeof(f.raw) = 'text' AND json_valid(f.raw) AND json_type(f.raw) = 'object' THEN {} END")


def frames_after(conn: sqlite3.Connection, after: int, upto: int, *, recorder: str, pid: int) -> list[tuple]:
    """The frames stored after rowid `after` up to `upto` (inclusive) by the recorder named `recorder`
    in process `pid`, in the order stored: (server, session, direction, bytes, ts, method, id type,
    id, answer), read from the frame's JSON object by SQLite (None where it is none): `method` a
    string, `id type` and `id` the JSON type and value of its id, `answer` 1 when it has a result
    or an error."""
    return conn.execute(
        "SELECT coalesce(s.label, ''), f.session_id, f.direction, f.size, f.ts, "
        + ", ".join(_ENVELOPE.format(e) for e in (
            "json_extract(f.raw, '$.method')", "json_type(f.raw, '$.id')", "json_extract(f.raw, '$.id')",
            "(json_type(f.raw, '$.result') IS NOT NULL OR json_type(f.raw, '$.error') IS NOT NULL)"))
        + " FROM frames f JOIN sessions s ON s.id = f.session_id WHERE f.rowid > ? AND f.rowid <= ? "
        "AND s.recorder = ? AND s.pid = ? ORDER BY f.rowid", (after, upto, recorder, pid)).fetchall()
