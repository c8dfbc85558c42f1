"""The analysis report as SARIF 2.1.0 (OASIS), for code scanning, within what GitHub's code
scanning takes in (every result with a rule, a message, a file location with a line, and
partialFingerprints).

Where a result is: a session imported from a frame-log is at that file, relative to a root folder
(`uriBaseId` %SRCROOT%), at the frame's line (`region.startLine`); a session read from a
database, or from an HTTP capture, is at that file as a whole (line 1: code scanning asks every
result for a line), its message saying the session and frame (so is a finding about a whole
session). Every result also has a logical location, the frame (or
batch element) it is about, whose parent is its session: `session/<id>/frame/<seq>`, listed once
in the run's `logicalLocations`.

Each result's `partialFingerprints["mcptapFinding/v1"]` is a hash of what the finding is (session
id, code, frame, batch element, message), the same in every run over the same recording, so code
scanning keeps one alert for it. A result from a database also carries its own
`primaryLocationLineHash`: nothing hashes line 1 of a binary file for it.

Rules carry their full description, `help` (text and Markdown) and a `helpUri` into docs/rules.md
(analyzer/report/ruledocs.py); the run has one `invocation` (the command line, the analysis's start
and end, whether its results were stored). A run holds at most MAX_RESULTS results, as code
scanning takes in: past that, the most severe, and a notification of how many were left out. Every string is written with the characters that are
not printable (controls, C1, bidi and other format characters) as JSON escapes
(textsafe.json_text). Results are written one at a time, never held as one document."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO
from urllib.parse import quote

import orjson

from mcptap import __version__

from mcptap.analysis import rules

from mcptap.report import jsonout, ruledocs

from mcptap.wire.textsafe import json_text

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ROOT_ID = "%SRCROOT%"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT = "mcptapFinding/v1"
LINE_HASH = "primaryLocationLineHash"
MAX_RESULTS = 25_000
"""Results code scanning takes in one run (an upload with more is refused); past this the most
severe are written and a notification says how many were left out."""
RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Source:
    """Where a session's frames came from: a file, and (for a frame-log) each frame's line
    (importer.FrameLines); None lines: the file has no lines to point at (an HTTP capture)."""

    path: str
    lines: object | None = None


def artifact_location(path: str, root: str) -> dict:
    """A file as a SARIF artifactLocation: relative to `root` with the %SRCROOT% base, or an
    absolute file: URI when it lies outside the root."""
    full, base = os.path.abspath(path), os.path.abspath(root)
    relative = os.path.relpath(full, base)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return {"uri": _file_uri(full)}
    return {"uri": quote(relative.replace(os.sep, "/")), "uriBaseId": ROOT_ID}


def _file_uri(path: str) -> str:
    return "file://" + quote(path.replace(os.sep, "/") if os.sep != "/" else path)


def _dump(value) -> str:
    """Compact JSON, every character that is not printable as a JSON escape."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # text orjson refuses (a lone surrogate from a hostile log)
        text = json.dumps(value, separators=(",", ":"))
    return json_text(text)


def fingerprint(sid: str, seq: int | None, idx: int | None, code: str, message: str) -> str:
    """What a finding is, hashed: the same for the same finding of the same recording in every
    run, whatever the database, the folder or the time."""
    identity = json.dumps([sid, code, seq, idx, message], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(identity.encode("ascii")).hexdigest()[:32]


class _LogicalLocations:
    """The run's logical locations: each session once, each frame (and batch element) with a
    finding once, its parent the session (the frame); `at` gives a result's reference."""

    def __init__(self):
        self.listed: list[dict] = []
        self.index: dict[tuple, int] = {}

    def _add(self, key: tuple, name: str, qualified: str, kind: str, parent: int | None) -> int:
        if key not in self.index:
            entry = {"name": name, "fullyQualifiedName": qualified, "kind": kind, "index": len(self.listed)}
            if parent is not None:
                entry["parentIndex"] = parent
            self.index[key] = len(self.listed)
            self.listed.append(entry)
        return self.index[key]

    def at(self, sid: str, seq: int | None, idx: int | None = None) -> dict:
        here = self._add((sid,), sid, f"session/{sid}", "module", None)
        if seq is not None:
            here = self._add((sid, seq), f"frame {seq}", f"session/{sid}/frame/{seq}", "object", here)
            if idx is not None:
                here = self._add((sid, seq, idx), f"element {idx}", f"session/{sid}/frame/{seq}/element/{idx}",
                                 "element", here)
        entry = self.listed[here]
        return {"name": entry["name"], "fullyQualifiedName": entry["fullyQualifiedName"], "kind": entry["kind"],
                "index": here}


def write(report, out: IO[str], *, root: str | None = None, sources: Mapping[str, Source] | None = None,
          argv: Sequence[str] | None = None, shared: bool = False) -> None:
    """`report` (engine.Report) as SARIF. `sources`: the sessions imported from files, by
    session id; every other session points at the report's database. `root`: the folder
    relative URIs start from (default: the current folder). `argv`: the command line the
    invocation names (default: this process's, as `mcptap ARGS`). `shared` (a bundle's SARIF,
    handed to others): no command line, working folder or absolute root folder is written, only
    relative locations."""
    root = os.getcwd() if root is None else root
    sources = dict(sources or {})
    registry = rules.load()
    findings = _most_severe(report.findings, MAX_RESULTS)
    left_out = len(report.findings) - len(findings)
    used = sorted({f.code for f in findings})
    rule_index = {code: i for i, code in enumerate(used)}

    artifacts: list[str] = []  # paths, in the order of their index
    artifact_index: dict[str, int] = {}

    def artifact(path: str) -> int:
        if path not in artifact_index:
            artifact_index[path] = len(artifacts)
            artifacts.append(path)
        return artifact_index[path]

    lines = _frame_lines(findings, sources)
    locations = {sid: (artifact(src.path), src.path) for sid, src in sources.items()}
    db_artifact = artifact(report.db_path) if any(f.session_id not in sources for f in findings) else None
    where = {path: artifact_location(path, root) for path in artifacts}
    logical = _LogicalLocations()

    def physical(sid: str, seq: int | None) -> dict:
        """The file and line; line 1 (the file as a whole) for a database, an HTTP capture and
        a finding about a whole session."""
        index, path = locations.get(sid, (db_artifact, report.db_path))
        return {"artifactLocation": {**where[path], "index": index}, "region": {"startLine": lines.get((sid, seq), 1)}}

    out.write('{"$schema":"' + SCHEMA + '","version":"2.1.0","runs":[{"tool":{"driver":')
    out.write(_dump({
        "name": "mcptap", "version": __version__, "informationUri": ruledocs.REPOSITORY,
        "rules": [_rule(registry[code]) for code in used],
    }))
    out.write('},"invocations":' + _dump([_invocation(report, argv, left_out, shared)]))
    if not shared:
        out.write(',"originalUriBaseIds":' + _dump({ROOT_ID: {"uri": _file_uri(os.path.abspath(root).rstrip(os.sep) + "/")}}))
    out.write(',"artifacts":' + _dump([{"location": where[path]} for path in artifacts]))
    out.write(',"columnKind":"unicodeCodePoints","results":[')
    for n, (sid, seq, idx, code, severity, message, related) in enumerate(findings):
        text = message or code
        if (sid, seq) not in lines:  # not at the frame's own line: the message says where
            text += f" (session {sid}" + ("" if seq is None else f", frame {seq}") + ")"
        marks = {FINGERPRINT: fingerprint(sid, seq, idx, code, message)}
        if sid not in sources:
            marks[LINE_HASH] = marks[FINGERPRINT]
        result = {
            "ruleId": code, "ruleIndex": rule_index[code], "level": LEVEL[severity], "message": {"text": text},
            "locations": [{"physicalLocation": physical(sid, seq), "logicalLocations": [logical.at(sid, seq, idx)]}],
            "partialFingerprints": marks,
            "properties": {"session": sid, "frame": seq, "index": idx, "relatedFrame": related},
        }
        if related is not None:
            result["relatedLocations"] = [{
                "id": 1, "message": {"text": f"frame {related}"}, "physicalLocation": physical(sid, related),
                "logicalLocations": [logical.at(sid, related)]}]
        out.write(("," if n else "") + _dump(result))
    out.write('],"logicalLocations":' + _dump(logical.listed) + "}]}\n")


def _most_severe(findings: list[tuple], limit: int) -> list[tuple]:
    """`findings`, or past `limit` the `limit` most severe of them (the first of each severity),
    in their order."""
    if len(findings) <= limit:
        return findings
    kept = sorted(range(len(findings)), key=lambda i: RANK[findings[i][4]])[:limit]
    return [findings[i] for i in sorted(kept)]


def _invocation(report, argv: Sequence[str] | None, left_out: int = 0, shared: bool = False) -> dict:
    """The run's invocation: the command line and working folder (not when `shared`), when the
    analysis began and ended, and warning notifications when its results could not be stored or
    findings were left out."""
    invocation: dict = {"executionSuccessful": True}
    if not shared:
        args = ["mcptap", *(sys.argv[1:] if argv is None else argv)]
        invocation.update({"commandLine": shlex.join(args), "arguments": args[1:],
                           "workingDirectory": {"uri": _file_uri(os.getcwd().rstrip(os.sep) + "/")}})
    for key, ts in (("startTimeUtc", getattr(report, "started_at", None)), ("endTimeUtc", getattr(report, "ended_at", None))):
        if jsonout.iso(ts) is not None:
            invocation[key] = jsonout.iso(ts)
    notes = []
    if report.not_stored_reason and report.not_stored_reason != "not asked to":
        notes.append(f"results not stored in the database: {report.not_stored_reason}")
    if left_out:
        notes.append(f"{left_out:,} less severe findings left out: code scanning takes at most {MAX_RESULTS:,} "
                     "results in a run (--format json has every one)")
    if notes:
        invocation["toolExecutionNotifications"] = [{"level": "warning", "message": {"text": n}} for n in notes]
    return invocation


SECURITY_SEVERITY = {"error": "8.0", "warning": "5.0", "info": "2.0"}
"""GitHub code scanning's `security-severity` (a number from 0.0 to 10.0, written as a string: over
9.0 critical, 7.0 to 8.9 high, 4.0 to 6.9 medium, below 4.0 low) of a rule of group `security`, by
its default severity: an error is high, a warning medium, an info low."""


def _rule(r: rules.Rule) -> dict:
    properties = {"group": r.group, "severity": ruledocs.severity_text(r)}
    if r.group == "security":
        properties.update({"tags": ["security"],
                           "security-severity": SECURITY_SEVERITY[ruledocs.default_severity(r)]})
    return {
        "id": r.code, "name": r.code,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": ruledocs.full_description(r)},
        "help": {"text": ruledocs.help_text(r), "markdown": ruledocs.help_markdown(r)},
        "helpUri": ruledocs.help_uri(r.code),
        "defaultConfiguration": {"level": LEVEL[ruledocs.default_severity(r)]},
        "properties": properties,
    }


def _frame_lines(findings: list[tuple], sources: Mapping[str, Source]) -> dict[tuple[str, int], int]:
    """(session, seq) -> line in its file, for every frame a finding names (itself or related)."""
    wanted: dict[str, set[int]] = {}
    for sid, seq, _idx, _code, _sev, _msg, related in findings:
        if sid in sources and sources[sid].lines is not None:
            wanted.setdefault(sid, set()).update(s for s in (seq, related) if s is not None)
    found = {}
    for sid, seqs in wanted.items():
        for seq, line in sources[sid].lines.of(seqs).items():
            found[(sid, seq)] = line
    return found
