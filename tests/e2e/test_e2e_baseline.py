"""Tool drift on real recordings: the real `mcp` SDK client drives the real SDK test server through
`mcptap record`; `mcptap baseline` keeps what it declared, and a second recording with one tool's
description changed is judged against it by `mcptap analyze --baseline`: the finding names the
tool, the path and the calls that used it, and the CI gate fails."""

import json

import pytest

from tests.conftest import run, tee, tool
from tests.support.inprocess import cli


def record(sdk_python, db, name: str, mode: str, *server_args: str) -> None:
    chain = tee(db, sdk_python, tool("sdk_server.py"), *server_args, name=name)
    done = run([sdk_python, tool("sdk_client.py"), mode, "sdk", "--", *chain], timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_tool_description_changed_since_the_baseline_is_named_with_its_path_and_calls_and_fails_the_gate(
        tmp_path, sdk_python, mode):
    approved, later, base = tmp_path / "approved.db", tmp_path / "later.db", tmp_path / "baseline.json"
    record(sdk_python, approved, "sdk", mode)
    done = cli("baseline", "--db", str(approved), "-o", str(base))
    assert done.returncode == 0, done.stderr.decode()
    doc = json.loads(base.read_text(encoding="utf-8"))
    (name,) = doc["servers"]
    (version,) = doc["servers"][name]
    tools = doc["servers"][name][version]["tools"]
    assert tools["echo"]["description"] == "Return the text."
    assert base.read_text(encoding="utf-8") == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    clean = cli("analyze", "--db", str(approved), "--baseline", str(base), "--format", "json")
    assert not [f for f in json.loads(clean.stdout)["findings"] if f["code"].startswith("definition-")]

    record(sdk_python, later, "sdk", mode, "--echo-description", "Return the text, unchanged.")
    done = cli("analyze", "--db", str(later), "--baseline", str(base), "--format", "json",
                      "--fail-on", "warning")
    assert done.returncode == 1, done.stdout.decode()[-2000:]
    drifted = [f for f in json.loads(done.stdout)["findings"] if f["code"].startswith("definition-")]
    (finding,) = drifted
    assert finding["code"] == "definition-changed" and finding["severity"] == "warning"
    assert 'tool "echo"' in finding["message"] and "$.description" in finding["message"]
    assert "used by tools/call at frame" in finding["message"]
    assert finding["related_frame"] is not None, finding


def test_a_baseline_file_that_is_not_one_is_one_line_and_exit_2(tmp_path, sdk_python):
    db = tmp_path / "rec.db"
    record(sdk_python, db, "sdk", "legacy")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    for path in (bad, tmp_path / "missing.json"):
        done = cli("analyze", "--db", str(db), "--baseline", str(path))
        assert done.returncode == 2 and len(done.stderr.decode().strip().splitlines()) == 1, done.stderr
    done = cli("baseline", "--db", str(db), "--server", "nobody", "-o", str(tmp_path / "b.json"))
    assert done.returncode == 2 and not (tmp_path / "b.json").exists()
