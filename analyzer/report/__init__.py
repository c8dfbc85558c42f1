"""The analysis report in each `--format` of the contract: a readable table (per session, the
findings, and a per-method service response time table in the manner of Wireshark's SRT),
`json`, `jsonl` (one finding per line) and SARIF 2.1.0 (each frame a location).

The table (and `mcptap show`) summarise repeats: of each code in a session only the first
PER_CODE findings are listed, then one line says how many more there are and on which frames,
so a session full of one systematic violation prints in moments. `json` and `jsonl` keep every
finding and write them as they go (analyzer/report/jsonout.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, NamedTuple

from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.report import columns, jsonout
if TYPE_CHECKING:  # the analysis is loaded by the commands that analyse, not by those that only read
    from mcptap.analysis.messages import Finding
    from mcptap.engine import Report
from mcptap.wire.textsafe import printable

SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
RANK = {"error": 0, "warning": 1, "info": 2}
PER_CODE = 5
"""Findings of one code listed per session in the table and the transcript before the rest are
summed up in one line (`--max-per-code`; 0: all)."""


def finding_object(finding: Finding) -> dict:
    """A finding row as every machine-readable output gives it."""
    sid, seq, idx, code, severity, message, related = finding
    return {"code": code, "severity": severity, "session": sid, "frame": seq, "index": idx,
            "message": message, "related_frame": related}


def finding_objects(report: Report) -> Iterator[dict]:
    return map(finding_object, report.findings)


def session_objects(report: Report) -> list[dict]:
    """Each session analysed as SESSION (jsonout.session_object: its recorded row and this
    analysis), in the report's order; the analysis summary alone where the database cannot say."""
    import sqlite3
    import time

    from mcptap import store

    now = time.time()
    try:
        conn = store.open_existing(report.db_path)
    except Exception:  # no database behind the report (one built in memory)
        return [dict(s) for s in report.sessions]
    out = []
    try:
        recorded = getattr(report, "recorded", None) or {}
        for summary in report.sessions:
            try:
                rows = _recorded_rows(conn, summary["id"], recorded.get(summary["id"]))
            except sqlite3.Error:
                rows = []
            analysis = jsonout.analysis_fields(summary, summary.get("analyzed_at") or now)
            out.append(jsonout.session_object(rows[0], analysis) if rows else dict(summary))
    finally:
        conn.close()
    return out


def _recorded_rows(conn, sid: str, recorded: tuple | None) -> list[dict]:
    """`store.list_sessions` of one session; its frame counts and last ts from `recorded` (what
    the analysis counted as it read them: engine.Report.recorded) rather than a scan, if given."""
    from mcptap import store
    from mcptap.errors import SessionNotFound

    if recorded is None:
        return store.list_sessions(conn, sid)
    try:
        row = store.get_session(conn, sid)
    except SessionNotFound:
        return []
    row["c2s"], row["s2c"], row["last_ts"] = recorded
    return [row]


def method_objects(report: Report) -> list[dict]:
    """The service response time table: per request method, counts (`tool_errors`: tools/call
    results with `isError: true`, apart from the JSON-RPC `errors`) and latencies in seconds."""
    return [{"method": method, "calls": calls, "errors": errors, "tool_errors": tool_errors,
             "unanswered": unanswered, "p50_s": jsonout.seconds(p50), "p95_s": jsonout.seconds(p95),
             "max_s": jsonout.seconds(top)}
            for method, calls, errors, tool_errors, unanswered, p50, p95, top in _method_seconds(report)]


def write_json(report: Report, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """The contract's document (sessions, findings) with the service response times and whether
    the results were stored; the findings last, one per line, written as they go."""
    jsonout.write_document(out, [
        ("sessions", session_objects(report)),
        ("methods", method_objects(report)),
        ("stored", report.stored),
        ("not_stored_reason", report.not_stored_reason),
        *((("cost", report.cost),) if report.cost is not None else ()),
        ("findings", jsonout.Stream(finding_objects(report))),
    ])


def write_jsonl(report: Report, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """One finding per line."""
    jsonout.write_lines(out, finding_objects(report))


def write_sarif(report: Report, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """SARIF 2.1.0, streamed (analyzer/report/sarif.py): `options.sources` maps the sessions imported
    from files to their file (sarif.Source), `options.root` is the folder relative URIs start from."""
    from mcptap.report import sarif

    sarif.write(report, out, root=options.root, sources=options.sources)


def _method_seconds(report: Report) -> list[tuple]:
    """(method, calls, errors, tool errors, unanswered, p50 s, p95 s, max s) per request method."""
    rows = []
    for method, s in sorted(report.methods.items(), key=lambda kv: str(kv[0])):
        sketch = s["latencies"]
        rows.append((method, s["calls"], s["errors"], s.get("tool_errors", 0), s["unanswered"],
                     sketch.quantile(0.5), sketch.quantile(0.95), sketch.max))
    return rows


class MethodRow(NamedTuple):
    """One request method's service response time: calls, errors, tool errors, unanswered, and
    the latency's p50, p95 and max in ms (None: no answer timed)."""

    method: str | None
    calls: int
    errors: int
    tool_errors: int
    unanswered: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


def method_rows(report: Report) -> list[MethodRow]:
    """Each request method's MethodRow, by method name."""
    return [MethodRow(method, calls, errors, tool_errors, unanswered, *(None if v is None else v * 1e3 for v in times))
            for method, calls, errors, tool_errors, unanswered, *times in _method_seconds(report)]


@dataclass
class More:
    """The findings of one code in one session past the first few: how many, the worst
    severity among them, and the first and last frame they are on."""

    session: str
    code: str
    severity: str
    count: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, finding: Finding) -> None:
        self.count += 1
        seq = finding.frame_seq
        if seq is not None:
            self.first = seq if self.first is None else min(self.first, seq)
            self.last = seq if self.last is None else max(self.last, seq)
        if RANK[finding.severity] < RANK[self.severity]:
            self.severity = finding.severity

    def text(self) -> str:
        frames = ("" if self.first is None else f", frame {self.first:,}" if self.first == self.last
                  else f", frames {self.first:,} to {self.last:,}")
        return f"and {self.count:,} more{frames}"


def _order(finding: Finding) -> tuple:
    return finding.session_id, -1 if finding.frame_seq is None else finding.frame_seq, RANK[finding.severity]


def first_of_each_code(findings: Iterable[tuple], per_code: int = PER_CODE) -> list:
    """The findings in session, frame and severity order, keeping of each code in a session only
    the first `per_code` (0: all); the rest of that code is one More, placed right after the
    last one kept."""
    ordered = sorted(findings, key=_order)
    if per_code <= 0:
        return ordered
    out: list = []
    kept: dict[tuple, int] = {}
    slots: dict[tuple, int] = {}  # (session, code) -> where its More goes in `out`
    for f in ordered:
        key = (f.session_id, f.code)
        n = kept.get(key, 0)
        if n < per_code:
            out.append(f)
            kept[key] = n + 1
            if n + 1 == per_code:
                slots[key] = len(out)
                out.append(None)
        else:
            more = out[slots[key]]
            if more is None:
                more = out[slots[key]] = More(f.session_id, f.code, f.severity)
            more.add(f)
    return [item for item in out if item is not None]


SCREEN_ROWS = 50
"""Sessions (and methods) the table lists one line each; past this it lists this many, the
sessions with the most severe findings first, and sums up the rest in one line, and the findings
are summed up per code (`--format json` and `jsonl` keep everything)."""


def _worst_first(session: dict) -> tuple:
    counts = session["findings"]
    return -counts["error"], -counts["warning"], -counts["info"]


def _session_rows(sessions: list[dict]) -> list[tuple]:
    rows = []
    for s in sessions:
        kinds = ", ".join(f"{printable(str(k))} {v}" for k, v in sorted(s["kinds"].items(), key=lambda kv: -kv[1]))
        counts = s["findings"]
        rows.append((printable(s["id"]), printable(s["revision"] or "unknown"), printable(str(s["revision_source"])), str(s["frames"]),
                     str(counts["error"]), str(counts["warning"]), str(counts["info"]), kinds))
    return rows


def _rest_of_sessions(rest: list[dict]) -> str:
    """One line for the sessions not listed: how many, and how many of them have findings of
    each severity at worst, and none."""
    worst = {"error": 0, "warning": 0, "info": 0, "clean": 0}
    for s in rest:
        counts = s["findings"]
        worst[next((k for k in ("error", "warning", "info") if counts[k]), "clean")] += 1
    return (f"and {len(rest):,} more sessions: {worst['error']:,} with errors, {worst['warning']:,} with warnings "
            f"at worst, {worst['info']:,} with infos only, {worst['clean']:,} clean\n")


def _code_rows(findings: list[Finding]) -> list[tuple]:
    """Per code (the most severe and most frequent first): severity, code, findings, sessions,
    and the first finding's session, frame and message as the example."""
    by_code: dict[str, list] = {}
    for f in findings:
        entry = by_code.get(f.code)
        if entry is None:
            by_code[f.code] = [f.severity, 1, {f.session_id}, f]
            continue
        entry[1] += 1
        entry[2].add(f.session_id)
        if RANK[f.severity] < RANK[entry[0]]:
            entry[0] = f.severity
    rows = sorted(by_code.items(), key=lambda kv: (RANK[kv[1][0]], -kv[1][1], kv[0]))
    return [(severity, printable(code), f"{count:,}", f"{len(sids):,}",
             printable(first.session_id[:13]) + ("" if first.frame_seq is None else f" #{first.frame_seq}"),
             printable(first.message))
            for code, (severity, count, sids, first) in rows]


def write_table(report: Report, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """Sessions, findings (the first `options.per_code` of each code per session, PER_CODE unless
    given, then one line for the rest), service response time per method, and the totals, coloured
    with `options.color`. More than SCREEN_ROWS sessions: the SCREEN_ROWS with the most severe
    findings and one line for the rest, and the findings per code."""
    color = options.color
    per_code = PER_CODE if options.per_code is None else options.per_code
    width = _terminal_width(out)
    many = len(report.sessions) > SCREEN_ROWS
    sessions = sorted(report.sessions, key=_worst_first)[:SCREEN_ROWS] if many else report.sessions
    out.write("sessions" + (f" (the {SCREEN_ROWS} with the most severe findings of {len(report.sessions):,}; "
                            "--format json lists every one)" if many else "") + "\n")
    columns.write(out, ("session", "revision", "source", "frames", "errors", "warnings", "infos", "kinds"),
                  _session_rows(sessions), right={3, 4, 5, 6}, width=width)
    if many:
        listed = {id(s) for s in sessions}
        out.write(_rest_of_sessions([s for s in report.sessions if id(s) not in listed]))
    out.write("\n")
    if report.findings and many:
        out.write(f"findings per code (over {len(report.sessions):,} sessions; --format json and jsonl list every "
                  "finding)\n")
        columns.write(out, ("severity", "code", "findings", "sessions", "first", "message"),
                      _code_rows(report.findings), right={2, 3}, width=width, colour=color)
    elif report.findings:
        items = first_of_each_code(report.findings, per_code)
        cut = any(isinstance(i, More) for i in items)
        out.write("findings" + (f" (the first {per_code} of each code in a session; --max-per-code 0 lists every "
                                "one, as --format json and jsonl do)" if cut else "") + "\n")
        columns.write(out, ("severity", "code", "session", "frame", "message"), [_finding_cells(i) for i in items],
                      width=width, colour=color)
    else:
        out.write("no findings\n")
    out.write("\nservice response time per method\n")
    methods = method_rows(report)
    if len(methods) > SCREEN_ROWS:  # most called first; the rest in one line
        methods.sort(key=lambda row: -row.calls)
        rest, methods = methods[SCREEN_ROWS:], methods[:SCREEN_ROWS]
    else:
        rest = []
    rows = [(printable(str(method)), str(calls), str(errors), str(tool_errors), str(unanswered),
             *(_ms(v) for v in (p50, p95, top)))
            for method, calls, errors, tool_errors, unanswered, p50, p95, top in methods]
    columns.write(out, ("method", "calls", "errors", "tool errors", "unanswered", "p50 ms", "p95 ms", "max ms"),
                  rows, right={1, 2, 3, 4, 5, 6, 7})
    if rest:
        out.write(f"and {len(rest):,} more methods: {sum(r.calls for r in rest):,} calls\n")
    totals = {"error": 0, "warning": 0, "info": 0}
    for s in report.sessions:
        for k, v in s["findings"].items():
            totals[k] += v
    frames = sum(s["frames"] for s in report.sessions)
    out.write(f"\n{counted(len(report.sessions), 'session')}, {counted(frames, 'frame')}: "
              f"{counted(totals['error'], 'error')}, {counted(totals['warning'], 'warning')}, "
              f"{counted(totals['info'], 'info')}"
              + ("" if report.stored else printable(f" (results not stored: {report.not_stored_reason})")) + "\n")


def counted(n: int, noun: str) -> str:
    """`1 session`, `2 sessions`, `0 errors`."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _finding_cells(item) -> tuple:
    if isinstance(item, More):
        return item.severity, printable(item.code), printable(item.session[:13]), "…", item.text()
    sid, seq, idx, code, severity, message, _related = item
    where = "" if seq is None else str(seq) + (f"[{idx}]" if idx is not None else "")
    return severity, printable(code), printable(sid[:13]), where, printable(message)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _terminal_width(out: IO[str]) -> int | None:
    """The width of the terminal `out` writes to; None when it is not one."""
    try:
        return os.get_terminal_size(out.fileno()).columns if out.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def reaches(report: Report, fail_on: str) -> bool:
    """Whether any finding is at or above `fail_on` (error > warning > info); never for 'never'."""
    if fail_on == "never":
        return False
    limit = RANK[fail_on]
    return any(RANK[f.severity] <= limit for f in report.findings)


def _registered() -> list:
    from mcptap.analysis import rules

    return sorted(rules.load().items(), key=lambda kv: (rules.GROUPS.index(kv[1].group), kv[0]))


def rule_objects() -> list[dict]:
    """The finding codes: code, group, severity (always one level: the one under an MCP revision,
    the newest when revisions differ), severities (always an object: the level by profile,
    `jsonrpc` and `mcp` always there, and a revision that differs), summary, spec reference."""
    from mcptap.analysis import mcp

    newest = mcp.KNOWN_REVISIONS[-1]
    out = []
    for code, r in _registered():
        by_profile = {"jsonrpc": r.severity_for(None), "mcp": r.severity_for("mcp")}
        if not isinstance(r.severity, str):
            by_profile.update((k, v) for k, v in r.severity.items() if k not in by_profile)
        out.append({"code": code, "group": r.group, "severity": r.severity_for(newest), "severities": by_profile,
                    "summary": r.summary, "ref": r.ref})
    return out


def write_rules(out: IO[str], fmt: str = "table") -> None:
    """The finding codes, one block each: code, group, severity by profile, summary, reference
    (`json`: {"rules": [...]}; `jsonl`: one rule per line)."""
    if fmt == "json":
        jsonout.write_document(out, [("rules", rule_objects())])
        return
    if fmt == "jsonl":
        jsonout.write_lines(out, rule_objects())
        return
    for code, r in _registered():
        sev = r.severity if isinstance(r.severity, str) else ", ".join(f"{k}: {v}" for k, v in r.severity.items())
        out.write(f"{code}  [{r.group}; {sev}]\n    {r.summary}\n    {r.ref}\n")
