"""What `mcptap sessions` prints: every session of a database as an object (its recorded row and,
once analysed, the stored analysis summary; analyzer/report/jsonout.py session_object; and its
handle, the shortest end of its id that names it) and as the cells of the session table, whole
(piped, --wide) or short for a terminal. It reads the store only: listing sessions loads no analysis."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

from mcptap import store
from mcptap.report import jsonout
from mcptap.store import cells
from mcptap.wire.textsafe import printable

SESSION_COLUMNS = ("id", "handle", "label", "transport", "revision", "started", "duration", "frames", "errors",
                   "warnings", "exit")
SCREEN_COLUMNS = ("session", "label", "via", "revision", "started", "took", "frames", "err", "warn", "exit")
"""`mcptap sessions` on a terminal: the handle names the session, times are short (UTC)."""


def clock(ts: float | None) -> str:
    """A time as UTC to the millisecond, `-` when unknown."""
    if ts is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):  # a time no calendar holds (an imported log's)
        return f"{ts!r}"


def session_objects(conn: sqlite3.Connection) -> list[dict]:
    """Every session as an object (jsonout.session_object, with its `handle` after its id: the
    shortest end of the id that names it, store.handles), oldest first."""
    cells.check_cheap(conn)
    with cells.diagnosed(conn, tables=("sessions", "frames", "analyses")):
        analysed = store.analysis_summaries(conn)
        out = []
        for s in store.list_sessions(conn):
            a = analysed.get(s["id"])
            if a is not None:
                a = {**a, "kinds": _kinds(a.get("kinds"))}
            out.append(jsonout.session_object(s, a))
    named = store.handles([o["id"] for o in out])
    return [{"id": o["id"], "handle": named.get(o["id"], o["id"]), **o} for o in out]


def _kinds(text):
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def telemetry_text(telemetry) -> str | None:
    """What a session's live telemetry did (sessions.telemetry, as text or as its object), in one
    line; None when it sent none."""
    if isinstance(telemetry, str):
        try:
            telemetry = json.loads(telemetry)
        except (ValueError, RecursionError):
            return None
    if not isinstance(telemetry, dict):
        return None
    n = {k: telemetry.get(k) if isinstance(telemetry.get(k), int) else 0
         for k in ("spans_sent", "spans_dropped", "frames_dropped", "points_sent", "points_dropped")}
    text = f"live telemetry: {n['spans_sent']} spans and {n['points_sent']} data points sent"
    lost = [f"{n[k]} {what}" for k, what in (("spans_dropped", "spans"), ("frames_dropped", "frames"),
                                            ("points_dropped", "data points")) if n[k]]
    return text + (f", dropped {', '.join(lost)} (endpoint down or behind)" if lost else ", none dropped")


def blank(value) -> str:
    return "-" if value is None else str(value)


def session_cells(obj: dict) -> tuple[str, ...]:
    """A session object as the cells of the `mcptap sessions` table ("-" for what is not known)."""
    analysed = obj["analyzed_at"] is not None
    duration = "-" if obj["duration_s"] is None else f"{obj['duration_s']:.3f}s" + ("" if obj["ended_at"] else "+")
    return (printable(obj["id"]), printable(obj["handle"]), printable(obj["label"] or ""),
            printable(obj["transport"] or ""), printable(obj["revision"] or "unknown") if analysed else "-",
            clock(obj["started_at"]), duration, str(obj["frames"]), blank(obj["errors"]), blank(obj["warnings"]),
            blank(obj["exit_status"]))


def screen_cells(obj: dict, today: str) -> tuple[str, ...]:
    """A session object as the cells of the `mcptap sessions` table on a terminal (SCREEN_COLUMNS):
    the handle, a start of today as its time, another as month-day and minute, a short duration."""
    full = session_cells(obj)
    started = full[5]
    if len(started) >= 23 and started[4] == "-":
        started = started[11:19] if started[:10] == today else started[5:16]
    return (full[1], full[2], full[3], full[4], started, _took(obj["duration_s"], obj["ended_at"]), *full[7:])


def _took(seconds: float | None, ended) -> str:
    if seconds is None:
        return "-"
    more = "" if ended else "+"
    if seconds < 10:
        return f"{seconds:.2f}s{more}"
    if seconds < 60:
        return f"{seconds:.1f}s{more}"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s{more}"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m{more}"
