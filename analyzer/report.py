"""The analysis report in each `--format` of the contract: a readable table (per session, the
findings, and a per-method service response time table in the manner of Wireshark's SRT),
`json`, `jsonl` (one finding per line) and SARIF 2.1.0 (each frame a location)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import IO

import orjson

from analyzer import __version__, rules
from analyzer.engine import Report
from analyzer.textsafe import printable

FORMATS = ("table", "json", "jsonl", "sarif")
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
RANK = {"error": 0, "warning": 1, "info": 2}


def finding_objects(report: Report) -> Iterator[dict]:
    for sid, seq, idx, code, severity, message, related in report.findings:
        yield {"code": code, "severity": severity, "session": sid, "frame": seq, "index": idx,
               "message": message, "related_frame": related}


def session_objects(report: Report) -> list[dict]:
    return [dict(s) for s in report.sessions]


def write_json(report: Report, out: IO[str]) -> None:
    document = {"sessions": session_objects(report), "findings": list(finding_objects(report))}
    try:  # orjson: at C speed (json.dump with an indent runs in Python)
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())
    except TypeError:  # text orjson refuses (a lone surrogate from a hostile log)
        json.dump(document, out, indent=2)
    out.write("\n")


def write_jsonl(report: Report, out: IO[str]) -> None:
    for obj in finding_objects(report):
        out.write(json.dumps(obj) + "\n")


def write_sarif(report: Report, out: IO[str], *, root: str | None = None, sources=None) -> None:
    """SARIF 2.1.0, streamed (analyzer/sarif.py): `sources` maps the sessions imported from files
    to their file (sarif.Source), `root` is the folder relative URIs start from."""
    from analyzer import sarif

    sarif.write(report, out, root=root, sources=sources)


def method_rows(report: Report) -> list[tuple]:
    """(method, calls, errors, unanswered, p50 ms, p95 ms, max ms) per request method."""
    rows = []
    for method, s in sorted(report.methods.items()):
        sketch = s["latencies"]
        p50, p95, top = sketch.quantile(0.5), sketch.quantile(0.95), sketch.max
        rows.append((method, s["calls"], s["errors"], s["unanswered"],
                     *(None if v is None else v * 1e3 for v in (p50, p95, top))))
    return rows


def write_table(report: Report, out: IO[str], *, color: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, force_terminal=color, no_color=not color, width=max(100, _width(out)),
                      highlight=False, markup=False, emoji=False)  # text from the traffic is never markup
    sessions = Table(title="sessions", title_justify="left", box=None, pad_edge=False)
    for col in ("session", "revision", "source", "frames", "kinds", "errors", "warnings", "infos"):
        sessions.add_column(col, justify="right" if col in ("frames", "errors", "warnings", "infos") else "left")
    for s in report.sessions:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(s["kinds"].items(), key=lambda kv: -kv[1]))
        counts = s["findings"]
        sessions.add_row(printable(s["id"]), printable(s["revision"] or "unknown"), s["revision_source"], str(s["frames"]), kinds,
                         str(counts["error"]), str(counts["warning"]), str(counts["info"]))
    console.print(sessions)
    console.print()
    if report.findings:
        found = Table(title="findings", title_justify="left", box=None, pad_edge=False)
        for col in ("severity", "code", "session", "frame", "message"):
            found.add_column(col, overflow="fold")
        ordered = sorted(report.findings, key=lambda f: (f[0], f[1] if f[1] is not None else -1, RANK[f[4]]))
        for sid, seq, idx, code, severity, message, related in ordered:
            where = "" if seq is None else str(seq) + (f"[{idx}]" if idx is not None else "")
            found.add_row(severity, code, printable(sid[:13]), where, printable(message))
        console.print(found)
    else:
        console.print("no findings")
    console.print()
    srt = Table(title="service response time per method", title_justify="left", box=None, pad_edge=False)
    for col in ("method", "calls", "errors", "unanswered", "p50 ms", "p95 ms", "max ms"):
        srt.add_column(col, justify="left" if col == "method" else "right")
    for method, calls, errors, unanswered, p50, p95, top in method_rows(report):
        srt.add_row(printable(str(method)), str(calls), str(errors), str(unanswered), *(_ms(v) for v in (p50, p95, top)))
    console.print(srt)
    totals = {"error": 0, "warning": 0, "info": 0}
    for s in report.sessions:
        for k, v in s["findings"].items():
            totals[k] += v
    frames = sum(s["frames"] for s in report.sessions)
    console.print(f"\n{len(report.sessions)} sessions, {frames} frames: {totals['error']} errors, "
                  f"{totals['warning']} warnings, {totals['info']} infos"
                  + ("" if report.stored else f" (results not stored: {report.not_stored_reason})"))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _width(out: IO[str]) -> int:
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 120


WRITERS = {"json": write_json, "jsonl": write_jsonl, "sarif": write_sarif}


def write(report: Report, fmt: str, out: IO[str], *, color: bool = False) -> None:
    if fmt == "table":
        write_table(report, out, color=color)
    else:
        WRITERS[fmt](report, out)


def reaches(report: Report, fail_on: str) -> bool:
    """Whether any finding is at or above `fail_on` (error > warning > info); never for 'never'."""
    if fail_on == "never":
        return False
    limit = RANK[fail_on]
    return any(RANK[f[4]] <= limit for f in report.findings)


def write_rules(out: IO[str]) -> None:
    """The finding codes, one block each: code, group, severity by profile, summary, reference."""
    for code, r in sorted(rules.load().items(), key=lambda kv: (rules.GROUPS.index(kv[1].group), kv[0])):
        sev = r.severity if isinstance(r.severity, str) else ", ".join(f"{k}: {v}" for k, v in r.severity.items())
        out.write(f"{code}  [{r.group}; {sev}]\n    {r.summary}\n    {r.ref}\n")
