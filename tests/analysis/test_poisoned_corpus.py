"""The corpus of poisoned tool definitions (tests/data/poisoned_definitions.json, modelled on
published tool-poisoning examples): each, declared alone by a server, gives exactly one security
finding, of its code; the same tool honestly described (its first sentence, its name and text in
plain ASCII, no argument descriptions) gives none. One frame log, imported and analysed once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcptap.analysis import rules
from tests.conftest import analyze_json
from tests.support.inprocess import cli
from tests.support.sessions import handshake, ok, req, write_log

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "data" / "poisoned_definitions.json").read_text(encoding="utf-8"))
CASES = CORPUS["cases"]


def honest(tool: dict) -> dict:
    """The tool as an honest server would declare it: an ASCII name, its description's first
    sentence in ASCII, its arguments without descriptions."""
    first = re.split(r"(?<=\.)\s", tool["description"], maxsplit=1)[0]
    schema = json.loads(json.dumps(tool["inputSchema"]))
    for spec in schema.get("properties", {}).values():
        spec.pop("description", None)
    return {"name": re.sub(r"[^\x20-\x7e]", "", tool["name"].replace("\u0435", "e")),
            "description": re.sub(r"[^\x20-\x7e]", "", first), "inputSchema": schema}


def session_frames(tool: dict) -> list[tuple[str, str]]:
    return handshake() + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": [tool]}))]


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> dict[str, list[str]]:
    """Session name -> the security finding codes of its analysis."""
    folder = tmp_path_factory.mktemp("poisoned")
    log, db = folder / "poisoned.jsonl", folder / "poisoned.db"
    write_log(log, {name: session_frames(tool) for case in CASES
                    for name, tool in ((case["name"], case["tool"]), (case["name"] + "~honest", honest(case["tool"])))})
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    _, report = analyze_json(db, "--fail-on", "never")
    security = {code for code, r in rules.load().items() if r.group == "security"}
    out: dict[str, list[str]] = {s["id"]: [] for s in report["sessions"]}
    for f in report["findings"]:
        if f["code"] in security:
            out[f["session"]].append(f["code"])
    return out


def test_the_corpus_names_its_source_and_a_security_code_for_every_case():
    security = {code for code, r in rules.load().items() if r.group == "security"}
    assert len(CASES) >= 8 and len({c["name"] for c in CASES}) == len(CASES)
    assert all(c["source"] and c["code"] in security for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_each_poisoned_definition_gives_its_one_security_finding(findings, case):
    assert findings[case["name"]] == [case["code"]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_the_same_tool_honestly_described_gives_none(findings, case):
    assert findings[case["name"] + "~honest"] == []
