"""`mcptap analyze --format junit`: read by junitparser and valid against the JUnit XSD that CI
systems use (Jenkins' junit-10.xsd, tests/data): a suite per session, a case per rule that
applies, a failure per finding at --fail-on with its frame and spec reference, text from traffic
made safe."""

from __future__ import annotations

import json
from pathlib import Path

import junitparser
import pytest
import xmlschema

from mcptap.analysis import rules
from tests.support.inprocess import cli
from tests.support.sessions import handshake, note, ok, req

XSD = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "data" / "junit-10.xsd"))
HOSTILE = "\x1b[31m<evil>]]>&\u202e"


def _log(tmp_path: Path) -> Path:
    frames = handshake() + [
        ("c2s", req(1, "tools/call", {"name": "t", "_meta": {"progressToken": "p"}})),
        ("s2c", note("notifications/progress", {"progressToken": "p", "progress": 2})),
        ("s2c", note("notifications/progress", {"progressToken": "p", "progress": 1})),
        ("s2c", ok(1, {"content": []})),
        ("c2s", '{"jsonrpc":"1.0","id":2,"method":"tools/list"}'),
        ("s2c", ok(2, {"tools": []})),
        ("c2s", req(3, HOSTILE)),
        ("s2c", ok(3)),
    ]
    path = tmp_path / "made.jsonl"
    path.write_text("".join(json.dumps({"session": name, "ts": 1764460800.0 + n, "direction": d, "raw": raw}) + "\n"
                            for name in ("one", "two") for n, (d, raw) in enumerate(frames)), encoding="utf-8")
    return path


@pytest.fixture
def report(tmp_path):
    made = []

    def make(*args: str) -> tuple[int, Path, dict]:
        made.append(1)
        out = tmp_path / f"junit{len(made)}.xml"
        db = tmp_path / f"a{len(made)}.db"
        result = cli("analyze", str(_log(tmp_path)), "--db", str(db), "--format", "junit", "-o", str(out),
                            *args)
        findings = json.loads(cli("analyze", "--db", str(db), "--format", "json", "--fail-on", "never").stdout)
        return result.returncode, out, findings
    return make


def test_a_suite_per_session_a_case_per_rule_a_failure_per_error_finding_valid_against_the_xsd(report):
    status, out, analysis = report()
    assert status == 1
    XSD.validate(str(out))
    xml = junitparser.JUnitXml.fromfile(str(out))
    suites = list(xml)
    assert sorted(s.name for s in suites) == ["one", "two"]
    registry = rules.load()
    applying = {code for code, r in registry.items() if r.group != "transport"}  # frame logs: no HTTP
    errors = [f for f in analysis["findings"] if f["severity"] == "error"]
    assert errors
    for suite in suites:
        cases = {c.name: c for c in suite}
        assert set(cases) == applying
        failed = {c.name: [r for r in c.result if isinstance(r, junitparser.Failure)] for c in suite}
        mine = [f for f in errors if f["session"] == suite.name]
        assert sum(len(v) for v in failed.values()) == len(mine)
        assert suite.failures == sum(1 for v in failed.values() if v)
        for f in mine:
            (failure,) = [r for r in failed[f["code"]] if f"frame {f['frame']}" in r.message]
            assert registry[f["code"]].ref in failure.message and failure.type == "error"


def test_warnings_fail_at_fail_on_warning_and_are_system_out_below_it(report):
    _, out, _ = report()
    case = next(c for c in next(iter(junitparser.JUnitXml.fromfile(str(out)))) if c.name == "progress-not-increasing")
    assert not [r for r in case.result if isinstance(r, junitparser.Failure)]
    assert "progress-not-increasing at frame" in case.system_out
    status, out, _ = report("--fail-on", "warning")
    XSD.validate(str(out))
    case = next(c for c in next(iter(junitparser.JUnitXml.fromfile(str(out)))) if c.name == "progress-not-increasing")
    (failure,) = [r for r in case.result if isinstance(r, junitparser.Failure)]
    assert failure.type == "warning" and status == 1


def test_text_from_traffic_is_escaped_and_printable_in_the_xml(report):
    _, out, _ = report("--fail-on", "never")
    data = out.read_bytes()
    assert b"\x1b" not in data and "\u202e".encode() not in data and b"<evil>" not in data
    XSD.validate(str(out))
    text = "".join(c.system_out or "" for s in junitparser.JUnitXml.fromfile(str(out)) for c in s)
    assert "<evil>]]>&" in text
