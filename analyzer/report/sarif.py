"""The analysis report as SARIF 2.1.0 (OASIS), for code scanning: each finding is a result whose
location is the file it came from, relative to a root folder (`uriBaseId` %SRCROOT%), at the
frame's line (`region.startLine`) when the session was imported from a frame-log; a session read
from a database points at the database, with a logical location per frame. Rules carry their
full description and a `helpUri` into docs/rules.md (analyzer/report/ruledocs.py). Results are written
one at a time, never held as one document."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO
from urllib.parse import quote

import orjson

from mcptap import __version__

from mcptap.analysis import rules

from mcptap.report import ruledocs

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ROOT_ID = "%SRCROOT%"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


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
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # text orjson refuses (a lone surrogate from a hostile log)
        return json.dumps(value)


def write(report, out: IO[str], *, root: str | None = None, sources: Mapping[str, Source] | None = None) -> None:
    """`report` (engine.Report) as SARIF. `sources`: the sessions imported from files, by
    session id; every other session points at the report's database. `root`: the folder
    relative URIs start from (default: the current folder)."""
    root = os.getcwd() if root is None else root
    sources = dict(sources or {})
    registry = rules.load()
    used = sorted({f[3] for f in report.findings})
    rule_index = {code: i for i, code in enumerate(used)}

    artifacts: list[str] = []  # paths, in the order of their index
    artifact_index: dict[str, int] = {}

    def artifact(path: str) -> int:
        if path not in artifact_index:
            artifact_index[path] = len(artifacts)
            artifacts.append(path)
        return artifact_index[path]

    lines = _frame_lines(report, sources)
    locations = {sid: (artifact(src.path), src.path) for sid, src in sources.items()}
    db_artifact = artifact(report.db_path) if any(f[0] not in sources for f in report.findings) else None
    where = {path: artifact_location(path, root) for path in artifacts}

    def physical(sid: str, seq: int | None) -> dict:
        index, path = locations.get(sid, (db_artifact, report.db_path))
        loc = {"artifactLocation": {**where[path], "index": index}}
        line = lines.get((sid, seq))
        if line is not None:
            loc["region"] = {"startLine": line}
        return loc

    out.write('{"$schema":"' + SCHEMA + '","version":"2.1.0","runs":[{"tool":{"driver":')
    out.write(_dump({
        "name": "mcptap", "version": __version__, "informationUri": ruledocs.REPOSITORY,
        "rules": [_rule(registry[code]) for code in used],
    }))
    out.write('},"originalUriBaseIds":' + _dump({ROOT_ID: {"uri": _file_uri(os.path.abspath(root).rstrip(os.sep) + "/")}}))
    out.write(',"artifacts":' + _dump([{"location": where[path]} for path in artifacts]))
    out.write(',"columnKind":"unicodeCodePoints","results":[')
    for n, (sid, seq, idx, code, severity, message, related) in enumerate(report.findings):
        name = f"frame {seq}" if seq is not None else f"session {sid}"
        qualified = f"{sid}/frames/{seq}" if seq is not None else sid
        if seq is not None and idx is not None:
            name, qualified = f"{name} element {idx}", f"{qualified}/{idx}"
        result = {
            "ruleId": code, "ruleIndex": rule_index[code], "level": LEVEL[severity], "message": {"text": message},
            "locations": [{"physicalLocation": physical(sid, seq),
                           "logicalLocations": [{"name": name, "fullyQualifiedName": qualified, "kind": "object"}]}],
            "properties": {"session": sid, "frame": seq, "index": idx, "relatedFrame": related},
        }
        if related is not None:
            result["relatedLocations"] = [{
                "id": 1, "message": {"text": f"frame {related}"}, "physicalLocation": physical(sid, related),
                "logicalLocations": [{"name": f"frame {related}", "fullyQualifiedName": f"{sid}/frames/{related}",
                                      "kind": "object"}]}]
        out.write(("," if n else "") + _dump(result))
    out.write("]}]}\n")


def _rule(r: rules.Rule) -> dict:
    return {
        "id": r.code, "name": r.code,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": ruledocs.full_description(r)},
        "helpUri": ruledocs.help_uri(r.code),
        "defaultConfiguration": {"level": LEVEL[ruledocs.default_severity(r)]},
        "properties": {"group": r.group, "severity": ruledocs.severity_text(r)},
    }


def _frame_lines(report, sources: Mapping[str, Source]) -> dict[tuple[str, int], int]:
    """(session, seq) -> line in its file, for every frame a finding names (itself or related)."""
    wanted: dict[str, set[int]] = {}
    for sid, seq, _idx, _code, _sev, _msg, related in report.findings:
        if sid in sources and sources[sid].lines is not None:
            wanted.setdefault(sid, set()).update(s for s in (seq, related) if s is not None)
    found = {}
    for sid, seqs in wanted.items():
        for seq, line in sources[sid].lines.of(seqs).items():
            found[(sid, seq)] = line
    return found
