"""Hostile text through the JSON outputs: a lone surrogate (legal as a JSON escape) in a
tools/call's arguments and its error answer, in a hand-edited baseline file; bidi controls and
noncharacters in a tool's description, an answer and an HTTP exchange's URL. The commands run
in-process (tests/support/inprocess.py): the OTLP file, the baseline file and the HAR export write every such character as
its JSON escape (as every other JSON output does), the tools/call keeps its span and its error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TESTS, mcptap
from tests.hostile.test_hostile_work import framelog
from tests.support.inprocess import cli

HIDDEN = ("\u202e", "\u2066", "\ufdd0", "\uffff")  # bidi override and isolate, two noncharacters


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("text")
    frames = [
        ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'),
        ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","description":"evil \u202e\u2066\ufdd0\uffff x",'
                '"inputSchema":{"type":"object"}}]}}'),
        ("c2s", '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":"\\udc80\u202e"}}}'),
        ("s2c", '{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"bad \\udc80 \u202e\ufdd0"}}'),
    ]
    log = framelog(folder / "s.jsonl", frames)
    db = folder / "s.db"
    done = cli("import", "--db", str(db), str(log))
    assert done.returncode == 0, done.stderr.decode()
    return db


def spans(path: Path) -> list[dict]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                found.extend(ss["spans"])
    return found


def escaped(text: str) -> bool:
    return not any(ch in text for ch in HIDDEN) and "\\u202e" in text.lower()


@pytest.mark.parametrize("content", [[], ["--otlp-content"]])
def test_a_tools_call_with_a_lone_surrogate_keeps_its_otlp_span_and_its_error(hostile_db, tmp_path, content):
    out = tmp_path / "s.otlp"
    done = cli("export", "--db", str(hostile_db), "--format", "otlp", *content, "-o", str(out))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    calls = [s for s in spans(out) if s["name"].startswith("tools/call")]
    assert len(calls) == 2  # the client's span and the server's
    for span in calls:
        outcome = {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}["mcptap.outcome"]
        assert outcome == "error" and span["status"]["code"] == 2
        assert "\\udc80" in span["status"]["message"]
    assert escaped(out.read_text(encoding="utf-8"))


def test_the_baseline_file_escapes_bidi_and_noncharacters_and_reads_back(hostile_db, tmp_path):
    base = tmp_path / "base.json"
    done = cli("baseline", "--db", str(hostile_db), "-o", str(base))
    assert done.returncode == 0, done.stderr.decode()
    text = base.read_text(encoding="utf-8")
    assert escaped(text)
    assert "\u202e" in json.loads(text)["servers"]["s"]["1"]["tools"]["t"]["description"]
    done = cli("analyze", "--db", str(hostile_db), "--baseline", str(base), "--format", "json",
                      "--fail-on", "never")
    assert done.returncode == 0, done.stderr.decode()
    assert not [f for f in json.loads(done.stdout)["findings"] if f["code"].startswith("definition")]


def test_a_baseline_file_holding_a_lone_surrogate_is_analysed(hostile_db, tmp_path):
    base = tmp_path / "base.json"
    assert cli("baseline", "--db", str(hostile_db), "-o", str(base)).returncode == 0
    doc = json.loads(base.read_text(encoding="utf-8"))
    tools = doc["servers"]["s"]["1"]["tools"]
    tools["t\udc80"] = dict(tools.pop("t"), name="t\udc80")
    base.write_text(json.dumps(doc), encoding="utf-8")  # ASCII: the surrogate as its escape
    done = cli("analyze", "--db", str(hostile_db), "--baseline", str(base), "--format", "json",
                      "--fail-on", "never")
    err = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in err and "could not be analysed" not in err, err[-2000:]
    codes = {f["code"] for f in json.loads(done.stdout)["findings"]}
    assert codes & {"definition-changed", "definition-added", "definition-removed"}, codes


def test_the_har_export_escapes_bidi_and_noncharacters(tmp_path):
    lines = [line for line in (TESTS / "golden" / "corpus" / "rules.jsonl").read_text(encoding="utf-8").splitlines()
             if '"session":"bad-content-type"' in line]
    hostile = [line.replace("http://127.0.0.1:1/mcp", "http://127.0.0.1:1/mcp?\u202e\ufdd0") for line in lines]
    log = tmp_path / "h.jsonl"
    log.write_text("\n".join(hostile) + "\n", encoding="utf-8")
    db = tmp_path / "h.db"
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    out = tmp_path / "h.har"
    done = cli("export", "--db", str(db), "--format", "har", "-o", str(out))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    text = out.read_text(encoding="utf-8")
    assert escaped(text)
    assert any("\u202e" in e["request"]["url"] for e in json.loads(text)["log"]["entries"])
