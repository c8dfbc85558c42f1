"""The security reading of an analysis (`mcptap audit`): the findings of the rules of group
`security` alone, each with the server that was recorded, the tool it concerns, its evidence (the
finding's message) and what followed it (the tools/call requests made later in the same session,
after the model saw a poisoned description), as a table, JSON or SARIF 2.1.0 with GitHub's
`security-severity` on every rule (analyzer/report/sarif.py).

The tool of a finding is the tool a tools/call at its frame (or its related frame) named, else the
first tool the session declared that its message names in quotes or backticks; an elicitation's is
the tool called last before it (the call it interrupts)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING

from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.report import columns, jsonout
from mcptap.wire.textsafe import printable

if TYPE_CHECKING:
    from mcptap.analysis.messages import Finding
    from mcptap.engine import Report

GROUP = "security"
FOLLOWED = ("description-hidden-text", "description-instructs-model", "tool-shadowing")
"""The codes about a description the model read: their entries list the calls made after it."""
DURING_CALL = ("elicitation-asks-secret",)
"""The codes about a request the server sends while a call runs: their tool is the last one called
before it."""
FOLLOWED_SHOWN = 3
"""Calls the table lists in an entry's "what followed" before it says how many more."""
_QUOTED = re.compile(r"""['"`]([^'"`\s]{1,200})['"`]""")


@dataclass
class Entry:
    """One security finding as the audit shows it."""

    finding: Finding
    server: str
    tool: str | None = None
    followed: list[tuple[int, str]] = field(default_factory=list)  # (request frame, tool name)


@dataclass
class Audit:
    """The analysis (its findings the security ones alone, by session then frame) and an Entry per
    finding, in that order."""

    report: Report
    entries: list[Entry]


def security_codes() -> set[str]:
    """The finding codes of the `security` group, from the rule registry."""
    from mcptap.analysis import rules

    return {code for code, r in rules.load().items() if r.group == GROUP}


def read(report: Report) -> Audit:
    """The security reading of `report` (an analysis of `report.db_path`): its security findings,
    each with its server, tool and what followed it, read from the database's definitions."""
    codes = security_codes()
    order = {s["id"]: n for n, s in enumerate(report.sessions)}
    findings = sorted((f for f in report.findings if f.code in codes),
                      key=lambda f: (order.get(f.session_id, len(order)), -1 if f.frame_seq is None else f.frame_seq))
    audit = Audit(replace(report, findings=findings), [])
    if not findings:
        return audit
    from mcptap.analysis import drift
    from mcptap.engine import declared_pass

    sids = sorted({f.session_id for f in findings})
    declared = {d.session_id: (d, label) for d, label in declared_pass.declared(report.db_path, sids, results=True)}
    for f in findings:
        d, label = declared.get(f.session_id, (None, None))
        if d is None:
            audit.entries.append(Entry(f, f.session_id))
            continue
        server = drift.server_key(d, label)[0]
        calls = dict(d.calls)
        named = {name for listing in d.listings if listing.kind == "tools" for name in listing.items}
        tool = calls.get(f.frame_seq) or calls.get(f.related_frame) or _named_in(f.message, named)
        if tool is None and f.code in DURING_CALL and f.frame_seq is not None:
            tool = next((name for seq, name in reversed(d.calls) if seq < f.frame_seq), None)
        followed = ([(seq, name) for seq, name in d.calls if f.frame_seq is not None and seq > f.frame_seq]
                    if f.code in FOLLOWED else [])
        audit.entries.append(Entry(f, server, tool, followed))
    return audit


def _named_in(message: str, names: set[str]) -> str | None:
    for m in _QUOTED.finditer(message or ""):
        if m.group(1) in names:
            return m.group(1)
    return None


def reaches(audit: Audit, fail_on: str) -> bool:
    """Whether a security finding is at or above `fail_on` (as `mcptap analyze` exits)."""
    from mcptap import report

    return report.reaches(audit.report, fail_on)


def entry_object(entry: Entry) -> dict:
    """An entry as the JSON report gives it: the finding's fields, and server, tool, followed."""
    from mcptap.report import finding_object

    return {**finding_object(entry.finding), "server": entry.server, "tool": entry.tool,
            "followed": [{"frame": seq, "tool": name} for seq, name in entry.followed]}


def write_json(audit: Audit, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """{"sessions": [...], "stored": ..., "findings": [entry, ...]}, the findings one per line."""
    from mcptap.report import session_objects

    jsonout.write_document(out, [
        ("sessions", session_objects(audit.report)),
        ("stored", audit.report.stored),
        ("not_stored_reason", audit.report.not_stored_reason),
        ("findings", jsonout.Stream(map(entry_object, audit.entries))),
    ])


def _followed_text(followed: list[tuple[int, str]]) -> str:
    if not followed:
        return "-"
    shown = ", ".join(f"#{seq} {name}" for seq, name in followed[:FOLLOWED_SHOWN])
    rest = len(followed) - FOLLOWED_SHOWN
    return shown + (f" and {rest:,} more" if rest > 0 else "")


def write_table(audit: Audit, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """One line per security finding: severity, server, tool, finding, session and frame, what
    followed, evidence; then the totals. Every cell from the traffic is shown escaped."""
    from mcptap.report import _terminal_width, counted

    if not audit.entries:
        out.write(f"no security findings in {counted(len(audit.report.sessions), 'session')}\n")
        return
    rows = []
    for e in audit.entries:
        f = e.finding
        where = printable(f.session_id[:13]) + ("" if f.frame_seq is None else f" #{f.frame_seq}")
        rows.append((f.severity, printable(e.server), printable(e.tool or "-"), printable(f.code), where,
                     printable(_followed_text(e.followed)), printable(f.message)))
    columns.write(out, ("severity", "server", "tool", "finding", "where", "what followed", "evidence"), rows,
                  width=_terminal_width(out), colour=options.color)
    totals = {"error": 0, "warning": 0, "info": 0}
    for e in audit.entries:
        totals[e.finding.severity] += 1
    out.write(f"\n{counted(len(audit.entries), 'security finding')} in "
              f"{counted(len(audit.report.sessions), 'session')}: {counted(totals['error'], 'error')}, "
              f"{counted(totals['warning'], 'warning')}, {counted(totals['info'], 'info')}\n")


SECTION_ROWS = 200
"""Security findings the report's and the viewer's Security section list; the rest are counted."""


def section_row(session_id: str, label: str | None, seq: int | None, code: str, severity: str, message: str) -> dict:
    """A security finding as the Security section of the report and the viewer lists it (the
    template escapes it; `filter`: the display filter that shows its frame)."""
    return {"severity": severity, "code": code, "session": label or session_id[:13], "frame": seq,
            "message": message,
            "filter": f'session == "{session_id}"' + ("" if seq is None else f" and seq == {seq}")}


def section(findings: list[list], codes: dict[str, dict], sessions: list[dict]) -> tuple[list[dict], int]:
    """The report's Security section from the viewer's document: its findings rows ([session
    number, seq, idx, code, severity, message, related]) whose code's group is `security`, the first
    SECTION_ROWS of them as `section_row`s, and how many there are."""
    rows, total = [], 0
    for n, seq, _idx, code, severity, message, _related in findings:
        if codes.get(code, {}).get("group") != GROUP:
            continue
        total += 1
        if len(rows) < SECTION_ROWS:
            rows.append(section_row(sessions[n]["id"], sessions[n].get("label"), seq or None, code, severity, message))
    return rows, total


def write_sarif(audit: Audit, out: IO[str], options: WriteOptions = NO_OPTIONS) -> None:
    """SARIF 2.1.0 of the security findings (analyzer/report/sarif.py: every rule of group
    `security` carries `security-severity` and the tag `security`); `options.root` and
    `options.sources` as for the analysis' SARIF."""
    from mcptap.report import write_sarif as analysis_sarif

    analysis_sarif(audit.report, out, options)
