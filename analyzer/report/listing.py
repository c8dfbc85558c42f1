"""What `mcptap sessions` prints: every session of a database as an object (its recorded row and,
once analysed, the stored analysis summary; analyzer/report/jsonout.py session_object) and as the
cells of the session table. It reads the store only: listing sessions loads no analysis."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

from mcptap import store
from mcptap.report import jsonout
from mcptap.store import cells
from mcptap.wire.textsafe import printable

SESSION_COLUMNS = ("id", "label", "transport", "revision", "started", "duration", "frames", "errors", "warnings",
                   "exit")


def clock(ts: float | None) -> str:
    """A time as UTC to the millisecond, `-` when unknown."""
    if ts is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):  # a time no calendar holds (an imported log's)
        return f"{ts!r}"


def session_objects(conn: sqlite3.Connection) -> list[dict]:
    """Every session as an object (jsonout.session_object), oldest first."""
    cells.check_cheap(conn)
    with cells.diagnosed(conn, tables=("sessions", "frames", "analyses")):
        analysed = store.analysis_summaries(conn)
        out = []
        for s in store.list_sessions(conn):
            a = analysed.get(s["id"])
            if a is not None:
                a = {**a, "kinds": _kinds(a.get("kinds"))}
            out.append(jsonout.session_object(s, a))
    return out


def _kinds(text):
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def blank(value) -> str:
    return "-" if value is None else str(value)


def session_cells(obj: dict) -> tuple[str, ...]:
    """A session object as the cells of the `mcptap sessions` table ("-" for what is not known)."""
    analysed = obj["analyzed_at"] is not None
    duration = "-" if obj["duration_s"] is None else f"{obj['duration_s']:.3f}s" + ("" if obj["ended_at"] else "+")
    return (printable(obj["id"]), printable(obj["label"] or ""), printable(obj["transport"] or ""),
            printable(obj["revision"] or "unknown") if analysed else "-", clock(obj["started_at"]), duration,
            str(obj["frames"]), blank(obj["errors"]), blank(obj["warnings"]), blank(obj["exit_status"]))
