"""`mcptap audit` on a frame log of a poisoned server (the Invariant Labs example of
tests/data/poisoned_definitions.json, then a call that carries the file it asks for, a call of a
tool nobody declared): the security findings alone with server, tool and what followed, the exit
status by --fail-on, bad input in one line; in-process (typer's CliRunner) but for one real process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcptap.cli import app
from tests.conftest import mcptap, run
from tests.support.sessions import handshake, ok, req
from tests.support.sessions import write_log as support_write_log

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "data" / "poisoned_definitions.json").read_text(encoding="utf-8"))
POISONED = next(c["tool"] for c in CORPUS["cases"] if c["name"] == "invariant-add-sidenote")
HONEST = {"name": "add", "description": "Adds two numbers.", "inputSchema": POISONED["inputSchema"]}


def frames(tool: dict) -> list[tuple[str, str]]:
    notes = "~/.cursor/mcp.json: {}"
    return handshake() + [
        ("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": [tool]})),
        ("c2s", req(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2, "sidenote": notes}})),
        ("s2c", ok(2, {"content": [{"type": "text", "text": "3"}]})),
        ("c2s", req(3, "tools/call", {"name": "wipe", "arguments": {}})),
        ("s2c", ok(3, {"content": [{"type": "text", "text": "no such tool"}], "isError": True})),
    ]


def write_log(path: Path, tool: dict) -> Path:
    return support_write_log(path, frames(tool), "poisoned", session_records={"poisoned": {
        "transport": "stdio", "label": "poisoned", "started_at": 1000.0}})


@pytest.fixture
def poisoned(tmp_path) -> Path:
    return write_log(tmp_path / "poisoned.jsonl", POISONED)


def audit(*args: str):
    return CliRunner().invoke(app, ["audit", *args])


def test_json_gives_the_security_findings_alone_with_server_tool_and_what_followed(poisoned):
    result = audit(str(poisoned), "--format", "json")
    assert result.exit_code == 0, result.output  # warnings, below the default --fail-on error
    report = json.loads(result.stdout)
    by_code = {f["code"]: f for f in report["findings"]}
    assert set(by_code) == {"description-instructs-model", "tool-undeclared"}
    told = by_code["description-instructs-model"]
    assert (told["server"], told["tool"], told["frame"]) == ("s", "add", 5)
    assert told["followed"] == [{"frame": 6, "tool": "add"}, {"frame": 8, "tool": "wipe"}]
    assert told["related_frame"] == 6  # the call that carries the file the description asks for
    assert by_code["tool-undeclared"]["tool"] == "wipe" and by_code["tool-undeclared"]["followed"] == []


def test_fail_on_warning_exits_1_and_the_table_lists_them(poisoned):
    result = audit(str(poisoned), "--fail-on", "warning")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["severity", "server", "tool", "finding"]
    assert any("description-instructs-model" in line and "#6 add, #8 wipe" in line for line in lines)
    assert lines[-1] == "2 security findings in 1 session: 0 errors, 2 warnings, 0 infos"


def test_an_honest_server_gives_no_security_finding_whatever_the_calls(tmp_path):
    log = write_log(tmp_path / "honest.jsonl", HONEST)
    result = audit(str(log), "--fail-on", "warning", "--ignore-code", "tool-undeclared")
    assert result.exit_code == 0 and result.stdout == "no security findings in 1 session\n"


def test_sarif_rules_carry_githubs_security_severity(poisoned, tmp_path):
    out = tmp_path / "audit.sarif"
    assert audit(str(poisoned), "--format", "sarif", "-o", str(out)).exit_code == 0
    rules = json.loads(out.read_text(encoding="utf-8"))["runs"][0]["tool"]["driver"]["rules"]
    assert {r["id"]: r["properties"]["security-severity"] for r in rules} == {
        "description-instructs-model": "5.0", "tool-undeclared": "5.0"}


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    missing = run(mcptap("audit", "--db", str(tmp_path / "none.db")))
    assert missing.returncode == 2 and missing.stderr.count(b"\n") == 1 and b"Traceback" not in missing.stderr
    assert audit("--db", str(tmp_path / "none.db"), "--format", "html").exit_code == 2
