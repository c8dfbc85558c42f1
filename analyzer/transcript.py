"""What `mcptap show` and `mcptap sessions` print: a session's frames (and its server's stderr)
as a readable transcript, and the session list. Text only; the CLI decides where it goes.

The transcript analyses the session in memory (analyzer/engine.py; nothing is stored): each
frame's line has its kind, method and id, the frame it pairs with and the latency, and its
findings follow it, indented."""

from __future__ import annotations

import datetime as dt
import heapq
import json
import sqlite3
from collections.abc import Iterator

from analyzer import store
from analyzer.textsafe import printable

ARROWS = {"c2s": "c2s →", "s2c": "s2c ←", "stderr": "stderr"}
def clock(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):  # a time no calendar holds (an imported log's)
        return f"{ts!r}"


def preview(raw: bytes, width: int) -> str:
    text = raw[: width * 4 + 16].decode("utf-8", "replace")
    text = text.replace("\r", "\\r").replace("\t", " ")
    text = "".join(ch if ch.isprintable() else "\uFFFD" for ch in text)
    return text if len(text) <= width and len(raw) <= width * 4 + 16 else text[: max(width - 1, 0)] + "…"


def describe(row: list | None, elements: int = 0) -> str:
    """`request tools/call id=3`, `response id=3`, `batch of 2`, `unparseable`..."""
    if row is None:
        return ""
    kind, ident, method = row[4], row[5], row[6]
    if kind == "batch":
        return f"batch of {elements}"
    parts = [kind]
    if method and kind in ("request", "notification", "invalid"):
        parts.append(method)
    if ident is not None:
        parts.append(f"id={ident}")
    return printable(" ".join(parts))


def pairing(row: list | None) -> str:
    if row is None or row[7] is None:
        return ""
    return f"#{row[7]} {row[8] * 1e3:.1f}ms" if row[8] is not None else f"#{row[7]}"


def transcript(conn: sqlite3.Connection, session_id: str, *, width: int = 160, full: bool = False,
               stderr: bool = True, policy=None) -> Iterator[str]:
    """The session header, then one line per frame (and stderr line) in time order, each frame
    followed by its findings."""
    from analyzer.engine import analyze_session

    s = store.get_session(conn, session_id)
    summary, rows, findings = analyze_session(conn, session_id, policy=policy)
    frame_rows: dict[int, list] = {}
    elements: dict[int, int] = {}
    for row in rows:
        if row[2] is None:
            frame_rows[row[1]] = row
        else:
            elements[row[1]] = elements.get(row[1], 0) + 1
    by_frame: dict[int | None, list] = {}
    for f in findings:
        by_frame.setdefault(f[1], []).append(f)
    what = s.get("command") or s.get("upstream") or s.get("source") or ""
    if s.get("command"):
        try:
            what = " ".join(json.loads(s["command"]))
        except (ValueError, TypeError):
            pass
    yield printable(f"session {s['id']}  {s.get('label') or ''}  {s['transport']}  {what}".rstrip())
    yield (f"started {clock(s['started_at'])}  ended {clock(s.get('ended_at'))}  exit {_blank(s.get('exit_status'))}  "
           f"revision {summary['revision'] or 'unknown'} ({summary['revision_source']})")
    for f in by_frame.pop(None, []):
        yield f"        {f[4]}: {f[3]}: {printable(f[5])}"
    yield f"{'#':>6}  {'time':>10}  {'dir':<6}  {'bytes':>8}  {'message':<36}  {'pair':<14}  frame"
    t0 = s["started_at"]
    frames = ((f.ts, 0, f.seq, "c2s" if f.direction == "c2s" else "s2c", f.raw, f.incomplete, f.redacted)
              for f in store.iter_frames(conn, session_id))
    lines = ((e.ts, 1, e.seq, "stderr", e.raw, e.incomplete, None) for e in store.iter_stderr(conn, session_id)) \
        if stderr else iter(())
    for ts, is_err, seq, direction, raw, incomplete, redacted in heapq.merge(frames, lines,
                                                                          key=lambda r: (r[0], r[1], r[2])):
        number = "" if is_err else str(seq)
        row = None if is_err else frame_rows.get(seq)
        what = describe(row, elements.get(seq, 0)) + (" (no newline)" if incomplete else "")
        head = f"{number:>6}  {ts - t0:>+10.6f}  {ARROWS[direction]:<6}  {len(raw):>8}  {what:<36}  {pairing(row):<14}  "
        if full:
            yield head + printable(raw.decode("utf-8", "backslashreplace"))
        else:
            yield head + preview(raw, max(width - len(head), 20))
        if redacted:
            yield f"{'':>6}  {'':>10}  redacted: {printable(', '.join(_paths(redacted)))}"
        if not is_err:
            for f in by_frame.get(seq, ()):
                where = f"[{f[2]}] " if f[2] is not None else ""
                related = f" (see #{f[6]})" if f[6] is not None else ""
                yield f"{'':>6}  {'':>10}  {where}{f[4]}: {f[3]}: {printable(f[5])}{related}"


def _paths(redacted: str) -> list[str]:
    try:
        paths = json.loads(redacted)
    except ValueError:
        return [redacted]
    return [str(p) for p in paths] if isinstance(paths, list) else [redacted]


def _blank(value) -> str:
    return "-" if value is None else str(value)


def session_rows(conn: sqlite3.Connection) -> list[dict]:
    """The rows of `mcptap sessions` (revision and finding counts once `mcptap analyze` ran)."""
    rows = []
    analysed = store.analysis_summaries(conn)
    for s in store.list_sessions(conn):
        a = analysed.get(s["id"])
        end = s["ended_at"] if s["ended_at"] is not None else s["last_ts"]
        rows.append({
            "id": s["id"],
            "label": printable(s["label"] or ""),
            "transport": s["transport"],
            "started": clock(s["started_at"]),
            "duration": "-" if end is None else f"{max(end - s['started_at'], 0):.3f}s" + ("" if s["ended_at"] else "+"),
            "frames": s["c2s"] + s["s2c"],
            "c2s": s["c2s"],
            "s2c": s["s2c"],
            "exit": _blank(s["exit_status"]),
            "revision": (a["revision"] or "unknown") if a else "-",
            "errors": a["errors"] if a else "-",
            "warnings": a["warnings"] if a else "-",
        })
    return rows
