"""The security reading on real traffic: a poisoned server on the real `mcp` SDK
(tests/tools/sdk_poisoned_server.py: an Invariant-style poisoned `add` with text hidden in tag
characters, redefined after its first call, a form elicitation asking for a password) driven by the
real SDK client (tests/tools/sdk_poisoned_client.py) through `mcptap record`, once as a model that
obeys the description would (a call carrying the file it asked for, a tool nobody declared,
arguments that break the schema, a key in the arguments, a loop), once as a plain client of the
same server honestly described. `mcptap audit` gives each security finding of the first and none of
the second, as a table, JSON and SARIF; the filter field `finding.group`, the report's and the
viewer's Security section show them."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request

import pytest

from tests.conftest import copy_database, run, tee, tool
from tests.support.inprocess import cli
from tests.support.viewing import viewing

EXPECTED = {"description-hidden-text", "description-instructs-model", "definition-changed-after-use",
            "tool-undeclared", "arguments-schema-violation", "secret-in-arguments", "call-loop",
            "elicitation-asks-secret"}
KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def record(folder, sdk_python: str, script: str, *server_args: str):
    db = folder / "rec.db"
    server = tee(db, sdk_python, tool("sdk_poisoned_server.py"), *server_args, name=f"poisoned-{script}")
    done = run([sdk_python, tool("sdk_poisoned_client.py"), script, "--", *server], timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return db, json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def obeyed_once(tmp_path_factory, sdk_python):
    db, out = record(tmp_path_factory.mktemp("obey"), sdk_python, "obey")
    assert len(out["descriptions"]) == 2 and out["descriptions"][0] != out["descriptions"][1]
    assert [c[0] for c in out["calls"]].count("echo") == 4
    return db


@pytest.fixture
def obeyed(obeyed_once, tmp_path):
    return copy_database(obeyed_once, tmp_path / "obey.db")


@pytest.fixture(scope="module")
def plain_once(tmp_path_factory, sdk_python):
    db, out = record(tmp_path_factory.mktemp("plain"), sdk_python, "plain", "--clean")
    assert out["calls"][-1] == ["sign_in", False, "accept"], out
    return db


def audit(db, *args: str):
    return cli("audit", "--db", str(db), *args)


def test_the_obeying_client_gives_every_security_finding_and_audit_exits_1(obeyed):
    done = audit(obeyed, "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    codes = {f["code"] for f in report["findings"]}
    assert EXPECTED <= codes, codes
    assert {f["server"] for f in report["findings"]} == {"mcptap-test-poisoned-server"}
    assert KEY.encode() not in done.stdout  # the kind of secret, never its value


def test_the_calls_after_the_poisoned_description_are_listed_with_the_one_that_carried_the_file(obeyed):
    report = json.loads(audit(obeyed, "--format", "json").stdout)
    (told,) = [f for f in report["findings"] if f["code"] == "description-instructs-model"]
    assert told["tool"] == "add"
    followed = told["followed"]
    assert followed and followed[0]["tool"] == "add" and all(c["frame"] > told["frame"] for c in followed)
    assert {"delete_all_files", "echo", "sign_in"} <= {c["tool"] for c in followed}
    (undeclared,) = [f for f in report["findings"] if f["code"] == "tool-undeclared"]
    assert undeclared["tool"] == "delete_all_files"
    (asked,) = [f for f in report["findings"] if f["code"] == "elicitation-asks-secret"]
    assert asked["tool"] == "sign_in"


def test_the_table_names_server_tool_and_finding_with_hidden_text_escaped(obeyed):
    done = audit(obeyed)
    assert done.returncode == 1
    text = done.stdout.decode("utf-8")
    assert "mcptap-test-poisoned-server" in text and "description-hidden-text" in text
    assert not re.search("[\U000e0000-\U000e007f\u200b]", text)  # tag characters, zero-width space: escaped
    assert "security finding" in text.splitlines()[-1]


def test_sarif_carries_githubs_security_severity_on_every_rule(obeyed, tmp_path):
    out = tmp_path / "security.sarif"
    assert audit(obeyed, "--format", "sarif", "-o", str(out)).returncode == 1
    run_ = json.loads(out.read_text(encoding="utf-8"))["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= EXPECTED
    for r in rules:
        severity = r["properties"]["security-severity"]
        assert isinstance(severity, str) and 0.0 < float(severity) <= 10.0 and "security" in r["properties"]["tags"]
    assert {res["ruleId"] for res in run_["results"]} >= EXPECTED


def test_fail_on_never_exits_0_and_the_same_findings_come_from_analyze(obeyed):
    assert audit(obeyed, "--fail-on", "never").returncode == 0
    done = cli("analyze", "--db", str(obeyed), "--format", "json", "--fail-on", "never")
    assert EXPECTED <= {f["code"] for f in json.loads(done.stdout)["findings"]}


def test_the_filter_field_finding_group_selects_the_frames_of_security_findings(obeyed):
    audit(obeyed, "--fail-on", "never")
    shown = cli("show", "--db", str(obeyed), "poisoned-obey", "--filter", 'finding.group == "security"')
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.decode("utf-8")
    assert "elicitation-asks-secret" in text and "tool-undeclared" in text
    none = cli("show", "--db", str(obeyed), "poisoned-obey", "--filter", 'finding.group == "no-such-group"')
    assert "elicitation-asks-secret" not in none.stdout.decode("utf-8")


def test_the_report_has_a_security_section_with_the_findings(obeyed, tmp_path):
    out = tmp_path / "report.html"
    assert cli("report", "--db", str(obeyed), "-o", str(out)).returncode == 0
    page = out.read_text(encoding="utf-8")
    section = page[page.index('id="security-part"'):page.index('id="stats-part"')]
    assert "elicitation-asks-secret" in section and "tool-undeclared" in section
    assert "finding.group%20%3D%3D%20%22security%22" in section


def test_the_live_viewer_has_the_security_section_and_selects_by_finding_group(obeyed):
    audit(obeyed, "--fail-on", "never")
    with viewing(obeyed) as url:
        with urllib.request.urlopen(url, timeout=30) as answer:
            page = answer.read().decode("utf-8")
        section = page[page.index('id="security-part"'):page.index('id="stats-part"')]
        assert "elicitation-asks-secret" in section and "definition-changed-after-use" in section
        query = urllib.parse.quote('finding.group == "security"')
        request = urllib.request.Request(url.split("?")[0] + f"api/rows?filter={query}",
                                         headers={"X-Mcptap-Token": url.split("token=")[1]})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200 and b"elicitation-asks-secret" in answer.read()


def test_the_same_server_honestly_described_and_plainly_used_gives_no_security_finding(plain_once, tmp_path):
    db = copy_database(plain_once, tmp_path / "plain.db")
    done = audit(db, "--format", "json", "--fail-on", "warning")
    assert done.returncode == 0, done.stdout[-3000:]
    assert json.loads(done.stdout)["findings"] == []
    assert audit(db).stdout.decode("utf-8").startswith("no security findings")
