"""What each tool of `mcptap mcp` answers, as JSON-ready dicts: plain functions over a read-only
connection to the database, bounded in size and paged (`limit` at most MAX_LIMIT, an `offset`
and the `next_offset` to ask for, or None at the end). Text from the traffic is cut at
FRAME_CHARS and its invisible and control characters are written as escapes, as on a terminal:
a model reads what a person would see."""

from __future__ import annotations

import sqlite3

from mcptap.errors import MCPTapError
from mcptap.store import facereads, filtersql, filterlang, viewpages
from mcptap.store.sessionrefs import handles, resolve_session
from mcptap.wire.textsafe import printable, shown

MAX_LIMIT = 100
FRAME_CHARS = 8_192
"""A frame's text beyond this many characters is cut, with a mark of its whole size."""
SEVERITIES = ("error", "warning", "info")


class BadRequest(MCPTapError):
    """A tool's arguments that cannot be answered (an unknown session, a filter that does not parse):
    the tool's answer is an error naming it, in one line."""


def _bounded(limit: int) -> int:
    return max(1, min(int(limit), MAX_LIMIT))


def _page(offset: int, limit: int, total: int) -> dict:
    following = offset + limit
    return {"offset": offset, "total": total, "next_offset": following if following < total else None}


def _text(value) -> str | None:
    return None if value is None else printable(str(value))


def _session(conn: sqlite3.Connection, ref: str) -> str:
    try:
        return resolve_session(conn, ref)
    except MCPTapError as exc:
        raise BadRequest(str(exc)) from None


def _explained() -> dict:
    from mcptap.analysis.rules import load

    return load()


def sessions(conn: sqlite3.Connection, offset: int = 0, limit: int = 20) -> dict:
    """The recorded sessions, oldest first: handle, id, label, transport, times, frames, and, once
    analysed, the revision and the findings by severity."""
    limit, offset = _bounded(limit), max(0, int(offset))
    rows = viewpages.sessions(conn)
    counts = viewpages.analysis_counts(conn)
    short = handles([r["id"] for r in rows])
    out = []
    for r in rows[offset:offset + limit]:
        revision, errors, warnings, infos = counts.get(r["id"], (None, None, None, None))
        out.append({"handle": short.get(r["id"]), "id": r["id"], "label": _text(r["label"]),
                    "transport": r["transport"], "started_at": r["started_at"], "ended_at": r["ended_at"],
                    "frames": r["frames"] or 0, "analysed": r["id"] in counts, "revision": _text(revision),
                    "errors": errors, "warnings": warnings, "infos": infos})
    return {"sessions": out, **_page(offset, limit, len(rows))}


def runs(conn: sqlite3.Connection, offset: int = 0, limit: int = 20) -> dict:
    """The runs (the sessions one host process started, or one HTTP client's), oldest first: handle,
    id, start, sessions, frames, findings, host, host_app, client, servers."""
    from mcptap.report.runview import run_objects

    limit, offset = _bounded(limit), max(0, int(offset))
    found = run_objects(conn)
    out = [{**r, "servers": [printable(s) for s in r["servers"]],
            "client": {k: _text(v) if isinstance(v, str) else v for k, v in r["client"].items()}
            if isinstance(r["client"], dict) else _text(r["client"])} for r in found[offset:offset + limit]]
    return {"runs": out, **_page(offset, limit, len(found))}


def _frame_rows(conn: sqlite3.Connection, session_id: str, seqs: list[int]) -> list[dict]:
    out = []
    for row in viewpages.by_seq(conn, session_id, seqs):
        r = dict(zip(viewpages.ROW_COLUMNS, row))
        out.append({"session": session_id, "seq": r["seq"], "ts": r["ts"], "direction": r["direction"],
                    "size": r["size"], "kind": r["kind"], "method": _text(r["method"]), "id": _text(r["id"]),
                    "paired_frame": r["paired_frame"], "latency_s": r["latency_s"]})
    return out


def search(conn: sqlite3.Connection, filter: str, session: str | None = None, offset: int = 0,
           limit: int = 20) -> dict:
    """The frames a display filter (docs/filters.md: `method == "tools/call" and kind == "error"`)
    selects, of one session or all, in order: each with its kind, method, id, pair and latency."""
    limit, offset = _bounded(limit), max(0, int(offset))
    try:
        tree = filterlang.parse(filter)
    except MCPTapError as exc:
        raise BadRequest(f"the filter does not parse: {exc}") from None
    ids = [_session(conn, session)] if session else None
    sql, params = filtersql.select(conn, tree, ids)
    found: list[tuple[str, int]] = conn.execute(f"{sql} LIMIT ? OFFSET ?", (*params, limit + 1, offset)).fetchall()
    more = len(found) > limit
    found = found[:limit]
    frames: list[dict] = []
    by_session: dict[str, list[int]] = {}
    for sid, seq in found:
        by_session.setdefault(sid, []).append(seq)
    rows = {(f["session"], f["seq"]): f for sid, seqs in by_session.items() for f in _frame_rows(conn, sid, seqs)}
    frames = [rows[key] for key in found if key in rows]
    return {"frames": frames, "offset": offset, "next_offset": offset + limit if more else None}


def findings(conn: sqlite3.Connection, session: str | None = None, severity: str | None = None,
             code: str | None = None, offset: int = 0, limit: int = 20) -> dict:
    """The findings of the analysed sessions (or one), each with what its rule checks and the
    specification it rests on."""
    limit, offset = _bounded(limit), max(0, int(offset))
    if severity is not None and severity not in SEVERITIES:
        raise BadRequest(f"severity is one of {', '.join(SEVERITIES)}, not {severity!r}")
    sid = _session(conn, session) if session else None
    total, rows = facereads.findings_page(conn, session_id=sid, severity=severity, code=code, offset=offset,
                                          limit=limit)
    rules = _explained()
    out = []
    for row in rows:
        r = dict(zip(facereads.FINDING_COLUMNS, row))
        rule = rules.get(r["code"])
        out.append({"session": r["session_id"], "frame": r["frame_seq"], "element": r["idx"], "code": r["code"],
                    "severity": r["severity"], "message": _text(r["message"]), "related_frame": r["related_frame"],
                    "explanation": rule.summary if rule else None, "reference": rule.ref if rule else None,
                    "group": rule.group if rule else None})
    return {"findings": out, **_page(offset, limit, total)}


def frame(conn: sqlite3.Connection, session: str, seq: int) -> dict:
    """One frame whole (cut at FRAME_CHARS), its pair (the request it answers or the response that
    answered it) and the findings on either."""
    sid = _session(conn, session)
    seq = int(seq)
    this = next(iter(_frame_rows(conn, sid, [seq])), None)
    if this is None:
        raise BadRequest(f"session {sid} has no frame {seq}")
    this["text"] = _body(conn, sid, seq)
    pair = None
    if this["paired_frame"] is not None:
        pair = next(iter(_frame_rows(conn, sid, [this["paired_frame"]])), None)
        if pair is not None:
            pair["text"] = _body(conn, sid, pair["seq"])
    seqs = [seq] + ([pair["seq"]] if pair else [])
    notes = [{"frame": frame_seq, "element": idx, "code": code, "severity": severity, "message": _text(message),
              "related_frame": related}
             for frame_seq, idx, code, severity, message, related in viewpages.findings_of(conn, sid, seqs)]
    return {"frame": this, "pair": pair, "findings": notes}


def _body(conn: sqlite3.Connection, session_id: str, seq: int) -> str | None:
    got = viewpages.frame_bytes(conn, session_id, seq, FRAME_CHARS + 1)
    if got is None:
        return None
    raw, size = got
    return printable(shown(raw, FRAME_CHARS, size) or "")


def summary(conn: sqlite3.Connection, session: str) -> dict:
    """One session in brief: what it is, its messages by direction, kind and method (with mean
    latency), and its findings by code."""
    sid = _session(conn, session)
    rows = viewpages.sessions(conn)
    row = next(r for r in rows if r["id"] == sid)
    counts = viewpages.analysis_counts(conn)
    revision, errors, warnings, infos = counts.get(sid, (None, None, None, None))
    head = {"handle": handles([r["id"] for r in rows]).get(sid), "id": sid, "label": _text(row["label"]),
            "transport": row["transport"], "started_at": row["started_at"], "ended_at": row["ended_at"],
            "frames": row["frames"] or 0, "analysed": sid in counts, "revision": _text(revision),
            "errors": errors, "warnings": warnings, "infos": infos}
    messages = [{"direction": d, "kind": k, "method": _text(m), "count": n,
                 "mean_latency_s": round(lat, 6) if lat is not None else None}
                for d, k, m, n, lat in facereads.message_counts(conn, sid)[:MAX_LIMIT]]
    found = [{"severity": s, "code": c, "count": n} for s, c, n in facereads.finding_counts(conn, sid)]
    note = None if sid in counts else "not analysed yet: `mcptap analyze` gives kinds, pairs and findings"
    return {"session": head, "messages": messages, "findings": found, "note": note}
