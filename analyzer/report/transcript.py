"""What `mcptap show` and `mcptap sessions` print: a session's frames (and its server's stderr)
as a readable transcript or as records (`--format json|jsonl`), and the session list as rows
or as objects (analyzer/report/jsonout.py). The CLI decides where it goes.

The transcript analyses the session in memory (analyzer/engine/job.py; nothing is stored): each
frame's line has its kind, method and id, the frame it pairs with and the latency, and its
findings follow it, indented; of each code only the first few are printed, then one line says
how many more (analyzer/report/__init__.py, first_of_each_code). A frame's record is its frame-log
record (analyzer/wire/framelog.py: session, seq, ts, direction, raw or raw_b64, meta) with its time,
kind, method, id, pair, latency, size and every finding."""

from __future__ import annotations

import heapq
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from mcptap import report, store
from mcptap.analysis.messages import Finding, Message
from mcptap.analysis.statistics import TOOL_CALL, may_be_tool_error, tool_error

from mcptap.report import httplines, jsonout, listing
from mcptap.report.columns import cut
from mcptap.report.listing import clock

from mcptap.store import cells

from mcptap.wire import framelog, jsonwire
from mcptap.wire.textsafe import printable

ARROWS = {"c2s": "c2s →", "s2c": "s2c ←", "stderr": "stderr"}


def preview(raw: bytes, width: int) -> str:
    """The start of a frame on one line of `width` characters: what is not printable written as
    its escape (textsafe.printable; bytes that are not UTF-8 as `\\xNN`), cut with "…"."""
    text = printable(raw[: width * 4 + 16].decode("utf-8", "backslashreplace"))
    return text if len(text) <= width and len(raw) <= width * 4 + 16 else text[: max(width - 1, 0)] + "…"


def describe(row: Message | None, elements: int = 0) -> str:
    """`request tools/call id=3`, `response id=3`, `batch of 2`, `unparseable`..."""
    if row is None:
        return ""
    kind, ident, method = row.kind, row.id, row.method
    if kind == "batch":
        return f"batch of {elements}"
    parts = [kind]
    if method and kind in ("request", "notification", "invalid"):
        parts.append(method)
    if ident is not None:
        parts.append(f"id={ident}")
    return printable(" ".join(parts))


def pairing(row: Message | None) -> str:
    if row is None or row.paired_frame is None:
        return ""
    return (f"#{row.paired_frame} {row.latency_s * 1e3:.1f}ms" if row.latency_s is not None
            else f"#{row.paired_frame}")


@dataclass
class _Analysed:
    session: dict  # the sessions row
    summary: dict  # the analysis summary (engine: revision, revision_source, frames, kinds, findings)
    rows: dict[int, Message]  # frame seq -> its message row (idx NULL)
    elements: dict[int, list[Message]]  # frame seq -> its batch elements' message rows
    findings: list[Finding]
    joined: dict = field(default_factory=dict)  # frame seq -> its place in a joined operation (Member)


def analyse(conn: sqlite3.Connection, session_id: str, policy, finish: bool = True) -> _Analysed:
    """The session analysed in memory (`finish=False`: while it is still being recorded)."""
    from mcptap.engine import analyze_session
    from mcptap.engine.joined import frame_members as operation_members

    cells.check_cheap(conn, [session_id])
    s = store.get_session(conn, session_id)
    with cells.diagnosed(conn, [session_id], cells.RECORDED):
        summary, rows, findings = analyze_session(conn, session_id, policy=policy, finish=finish)
    frame_rows: dict[int, Message] = {}
    elements: dict[int, list[Message]] = {}
    for row in rows:
        if row.idx is None:
            frame_rows[row.frame_seq] = row
        else:
            elements.setdefault(row.frame_seq, []).append(row)
    joined = operation_members(conn, session_id, summary, rows, findings) if finish else {}
    return _Analysed(s, summary, frame_rows, elements, findings, joined)


class TimelineEntry(NamedTuple):
    """A frame (`source` 0) or a stderr line (1) of a session's timeline."""

    ts: float
    source: int
    seq: int
    direction: str  # c2s, s2c or stderr
    raw: bytes
    incomplete: bool
    redacted: str | None


def timeline(conn: sqlite3.Connection, session_id: str, stderr: bool,
             after: tuple[int, int] = (0, 0)) -> Iterator[TimelineEntry]:
    """Frames and stderr lines in time order; `after`: only the frames and stderr lines numbered
    above these seqs."""
    frames = (TimelineEntry(f.ts, 0, f.seq, "c2s" if f.direction == "c2s" else "s2c", f.raw, f.incomplete, f.redacted)
              for f in store.iter_frames(conn, session_id, after=after[0]))
    lines = (TimelineEntry(e.ts, 1, e.seq, "stderr", e.raw, e.incomplete, None)
             for e in store.iter_stderr(conn, session_id, after=after[1])) if stderr else iter(())
    return heapq.merge(frames, lines, key=lambda e: (e.ts, e.source, e.seq))


def transcript(conn: sqlite3.Connection, session_id: str, *, width: int = 160, full: bool = False,
               stderr: bool = True, policy=None, per_code: int = report.PER_CODE,
               keep: set[int] | None = None) -> Iterator[str]:
    """The session header, then one line per frame (and stderr line) in time order, each frame
    followed by its findings (of each code the first `per_code`, then one line for the rest;
    0: all). `keep`: only these frames (a display filter's), and no stderr lines; every line printable
    (textsafe.printable), whatever the recording holds."""
    a = analyse(conn, session_id, policy)
    with cells.diagnosed(conn, [session_id], cells.RECORDED):  # a wrong-typed cell: named, not a traceback
        lines = map(printable, _lines(conn, session_id, a, width, full, stderr and keep is None, per_code, keep))
        yield from lines if width >= NARROW or full else (cut(line, width) for line in lines)


def _lines(conn: sqlite3.Connection, session_id: str, a: "_Analysed", width: int, full: bool, stderr: bool,
           per_code: int, keep: set[int] | None = None) -> Iterator[str]:
    by_frame: dict[int | None, list] = {}
    previous = None
    for item in report.first_of_each_code(a.findings, per_code):
        at = previous.frame_seq if isinstance(item, report.More) else item.frame_seq
        by_frame.setdefault(at, []).append(item)
        previous = item
    yield from head_lines(a)
    for item in by_frame.pop(None, []):
        yield "        " + finding_line(item)
    yield COLUMNS_LINE if width >= NARROW else NARROW_COLUMNS_LINE
    t0 = a.session["started_at"]
    for entry in httplines.merged(timeline(conn, session_id, stderr), httplines.role_exchanges(conn, session_id)):
        if httplines.is_exchange(entry):  # the OAuth flow's, an error's own body: no frame
            if keep is None:
                yield httplines.line(entry, t0)
            continue
        if keep is not None and entry.seq not in keep:
            continue
        yield from entry_lines(a, entry, width, full, by_frame.get(entry.seq, ()) if not entry.source else ())
        member = a.joined.get(entry.seq) if not entry.source else None
        if member is not None and (not member.answer or member.latency_s is not None):
            yield FINDING_INDENT + operation_line(member)


COLUMNS_LINE = f"{'#':>6}  {'time':>10}  {'dir':<6}  {'bytes':>8}  {'message':<36}  {'pair':<14}  frame"
FINDING_INDENT = f"{'':>6}  {'':>10}  "
NARROW = 120
"""A terminal narrower than this gets the narrow transcript: the same columns, tighter, and every
line cut with an ellipsis at its width (--full and pipes keep every line whole)."""
NARROW_COLUMNS_LINE = f"{'#':>5} {'time':>9} {'dir':<5} {'bytes':>6} {'message':<24} {'pair':<12} frame"


def head_lines(a: "_Analysed") -> Iterator[str]:
    """The session's two header lines: what it is, and when, how it ended, its revision."""
    s, summary = a.session, a.summary
    what = s.get("command") or s.get("upstream") or s.get("source") or ""
    if s.get("command"):
        try:
            what = " ".join(json.loads(s["command"]))
        except (ValueError, TypeError, RecursionError):
            pass
    yield printable(f"session {s['id']}  {s.get('label') or ''}  {s['transport']}  {what}".rstrip())
    yield printable(f"started {clock(s['started_at'])}  ended {clock(s.get('ended_at'))}  "
                    f"exit {listing.blank(s.get('exit_status'))}  {revision_text(summary)}")
    telemetry = listing.telemetry_text(s.get("telemetry"))
    if telemetry is not None:
        yield printable(telemetry)


def revision_text(summary: dict) -> str:
    """`revision 2025-06-18 (initialize)`: the revision the session negotiated (a server's
    protocolVersion, whatever it holds, escaped) and where it was found."""
    return printable(f"revision {summary['revision'] or 'unknown'} ({summary['revision_source']})")


def entry_lines(a: "_Analysed", entry: TimelineEntry, width: int, full: bool, findings=(),
                row: Message | None = None) -> Iterator[str]:
    """A frame's (or stderr line's) line of the transcript (`entry` as `timeline` gives it), its
    redacted members, and `findings` under it. `row`: its message row where the analysis has none
    yet (a request still waiting for its answer)."""
    ts, is_err, seq, direction, raw, incomplete, redacted = entry
    number = "" if is_err else str(seq)
    if not is_err:
        row = a.rows.get(seq, row)
    what = describe(row, len(a.elements.get(seq, ()))) + (" (no newline)" if incomplete else "")
    if row is not None and row.kind == "response" and row.method == TOOL_CALL and may_be_tool_error(raw) \
            and tool_error(TOOL_CALL, jsonwire.parse(raw).value):
        what += " tool error"  # a tools/call result with isError: true, apart from a success as in the latency table
    t0 = a.session["started_at"]
    if width >= NARROW or full:
        head = f"{number:>6}  {ts - t0:>+10.6f}  {ARROWS[direction]:<6}  {len(raw):>8}  {what:<36}  {pairing(row):<14}  "
    else:
        head = (f"{number:>5} {ts - t0:>+9.4f} {ARROWS[direction]:<5} {len(raw):>6} {cut(what, 24):<24} "
                f"{cut(pairing(row), 12):<12} ")
    if full:
        yield head + printable(raw.decode("utf-8", "backslashreplace"))
    else:
        yield head + preview(raw, max(width - len(head), 20))
    if redacted:
        yield f"{FINDING_INDENT}redacted: {printable(', '.join(_paths(redacted)))}"
    for item in findings:
        yield FINDING_INDENT + finding_line(item)


_FINDING = re.compile(r"^(\s*(?:\[\d+\] )?)(error|warning|info)(?=: )")
_FRAME = re.compile(r"^(\s*\d*\s+[+-]?[\d.]+\s+)(c2s →|s2c ←|stderr)")
ARROW_STYLES = {"c2s →": "cyan", "s2c ←": "magenta", "stderr": "dim"}


def painter(colour: bool):
    """A function that colours a transcript line for a terminal (the severity of a finding, the
    direction of a frame) through rich's styles; without colour, the line as it is. Lines are
    already escaped (printable), so the only escape sequences are these."""
    if not colour:
        return lambda line: line
    from mcptap.report.columns import STYLES, paint

    def painted(line: str) -> str:
        m = _FINDING.match(line)
        if m:
            return m.group(1) + paint(m.group(2), STYLES[m.group(2)]) + line[m.end():]
        m = _FRAME.match(line)
        if m:
            return m.group(1) + paint(m.group(2), ARROW_STYLES[m.group(2)]) + line[m.end():]
        return line

    return painted


def operation_line(member) -> str:
    """`operation 3: retry of #5` under a request of a joined operation (an input_required request
    and its retries, a task and its polls); under the answer that ends it, the operation's latency."""
    step = member.step if member.parent is None else f"{member.step} of #{member.parent}"
    ended = f", ends it {member.latency_s * 1e3:.1f}ms after its first request" if member.latency_s is not None else ""
    return printable(f"operation {member.operation}: {step}{ended}")


def operation_object(member) -> dict:
    """A frame's place in a joined operation as its record's `operation` member."""
    return {"id": member.operation, "step": member.step, "parent": member.parent,
            "latency_s": jsonout.seconds(member.latency_s)}


def finding_line(item) -> str:
    if isinstance(item, report.More):
        return (f"{item.severity}: {printable(item.code)}: {item.text()} in this session, not shown "
                "(--max-per-code 0 shows every one)")
    where = f"[{item.idx}] " if item.idx is not None else ""
    related = f" (see #{item.related_frame})" if item.related_frame is not None else ""
    return printable(f"{where}{item.severity}: {item.code}: {item.message}{related}")


def _id_value(text: str | None):
    """A message's id as the JSON value it was, exactly as written (`1e400`, 400 digits, an
    array nested 5,000 deep): the analysis wrote it as JSON text (jsonwire.to_json)."""
    return None if text is None else jsonout.Raw(text)


def _message_fields(row: Message | None) -> dict:
    if row is None:
        return {"kind": None, "method": None, "id": None, "paired_frame": None, "latency_s": None}
    return {"kind": row.kind, "method": row.method, "id": _id_value(row.id), "paired_frame": row.paired_frame,
            "latency_s": jsonout.seconds(row.latency_s)}


def records(conn: sqlite3.Connection, session_id: str, *, stderr: bool = True,
            policy=None, keep: set[int] | None = None) -> tuple[dict, list[dict], Iterator[dict]]:
    """The session as records: (its session object with this analysis, the findings on no
    frame, each frame's and stderr line's record in time order). A frame's record:
    {"record": "frame", "session", "seq", "ts", "time", "offset_s", "direction", "size", "kind",
    "method", "id", "paired_frame", "latency_s", ["elements": [...] for a batch], ["operation": {"id",
    "step", "parent", "latency_s"} for a frame of a joined operation], "findings":
    [...], "raw" | "raw_b64", ["meta": {"incomplete", "redacted"}]}; a stderr line's:
    {"record": "stderr", "session", "seq", "ts", "time", "offset_s", "size", "raw" | "raw_b64",
    ["meta"]}. `keep`: only these frames (a display filter's), and no stderr lines."""
    a = analyse(conn, session_id, policy)
    stderr = stderr and keep is None
    (row,) = store.list_sessions(conn, session_id)
    with cells.diagnosed(conn, [session_id], cells.RECORDED):
        head = session_object(row, jsonout.analysis_fields(a.summary, time.time()))
    by_frame: dict[int | None, list] = {}
    for f in a.findings:
        by_frame.setdefault(f.frame_seq, []).append(report.finding_object(f))
    t0 = a.session["started_at"]
    head["exchanges"] = [httplines.record(session_id, httplines.ExchangeEntry(row["started_at"], httplines.EXCHANGE, row), t0)
                         for row in httplines.role_exchanges(conn, session_id)]

    def each() -> Iterator[dict]:
        with cells.diagnosed(conn, [session_id], cells.RECORDED):
            yield from frames()

    def frames() -> Iterator[dict]:
        for ts, is_err, seq, direction, raw, incomplete, redacted in timeline(conn, session_id, stderr):
            if is_err:
                rec = framelog.stderr_record(session_id, seq, ts, raw, bool(incomplete))
                yield {"record": "stderr", "session": session_id, "seq": seq, "ts": ts, "time": jsonout.iso(ts),
                       "offset_s": _offset(ts, t0), "size": len(raw), **_tail(rec)}
                continue
            if keep is not None and seq not in keep:
                continue
            rec = framelog.frame_record(session_id, seq, ts, direction, raw, bool(incomplete), redacted)
            obj = {"record": "frame", "session": session_id, "seq": seq, "ts": ts, "time": jsonout.iso(ts),
                   "offset_s": _offset(ts, t0), "direction": direction, "size": len(raw),
                   **_message_fields(a.rows.get(seq))}
            if seq in a.elements:
                obj["elements"] = [{"index": e.idx, **_message_fields(e)}
                                   for e in sorted(a.elements[seq], key=lambda e: e.idx)]
            if seq in a.joined:
                obj["operation"] = operation_object(a.joined[seq])
            obj["findings"] = by_frame.get(seq, [])
            obj.update(_tail(rec))
            yield obj

    return head, by_frame.get(None, []), each()


def _tail(rec: dict) -> dict:
    """The frame-log record's text and meta members."""
    return {k: rec[k] for k in ("raw", "raw_b64", "meta") if k in rec}


def _offset(ts: float, t0: float | None) -> float | None:
    return None if t0 is None else jsonout.seconds(ts - t0)


def _paths(redacted: str) -> list[str]:
    try:
        paths = json.loads(redacted)
    except (ValueError, TypeError, RecursionError):
        return [redacted]
    return [str(p) for p in paths] if isinstance(paths, list) else [redacted]


session_object = jsonout.session_object
