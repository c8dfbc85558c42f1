"""`mcptap mcp`: the recordings served to an agent over stdio, driven by the real `mcp` SDK client.
The face runs on the SDK's side environment (the SDK cannot share mcptap's test environment with
mitmproxy 11's pins), with mcptap's base dependencies at the versions of this environment and
mcptap's own source on its path, as `pip install 'mcptap[mcp]'` would give it. The installed wheel
itself (`pip install 'mcptap[mcp]'` over the plain install) serves the same SDK client in CI's wheel
smoke (.ci/wheel_smoke.py `mcp_face`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import TOOLS, mcptap, run, side_venv
from tests.support.demo import demo_copy, demo_recording  # noqa: F401 - demo_recording: the fixture

ROOT = Path(__file__).resolve().parents[2]
TOOL_NAMES = {"list_runs", "list_sessions", "search_frames", "list_findings", "get_frame", "summarize_session"}


def _base_pins() -> tuple[str, ...]:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    names = [re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0] for d in declared]
    return tuple(f"{name}=={metadata.version(name)}" for name in names)


@pytest.fixture(scope="module")
def face(tmp_path_factory) -> tuple[str, dict]:
    """(the side environment's python, the environment `mcptap mcp` runs in)."""
    python = side_venv("face", ("mcp==2.3.0", *_base_pins()))
    farm = tmp_path_factory.mktemp("source")
    package = farm / "mcptap"
    package.mkdir()
    for entry in (ROOT / "analyzer").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "addons").symlink_to(ROOT / "addons")
    env = {"PYTHONPATH": str(farm), "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    return python, env


@pytest.fixture(scope="module")
def recording(demo_recording, tmp_path_factory) -> Path:
    """The demo's recording: a stdio and an HTTP session, analysed, with planted faults."""
    return demo_copy(demo_recording, tmp_path_factory.mktemp("demo"))["db"]


def _drive(face, db: Path, calls: list) -> dict:
    python, env = face
    done = run([python, str(TOOLS / "sdk_face_client.py"), "--", python, "-m", "mcptap", "mcp", "--db", str(db)],
               env={**os.environ, "MCPTAP_TEST_SERVER_ENV": json.dumps(env), "MCPTAP_TEST_CALLS": json.dumps(calls)})
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def test_an_sdk_client_lists_the_tools_searches_frames_and_reads_findings(face, recording):
    before = hashlib.sha256(recording.read_bytes()).hexdigest()
    out = _drive(face, recording, [
        ["list_sessions", {}],
        ["search_frames", {"filter": "kind == unparseable or kind == invalid"}],
        ["list_findings", {"severity": "error"}],
        ["summarize_session", {"session": "demo"}],
        ["search_frames", {"filter": "method == initialize and kind == response", "session": "demo"}],
        ["list_sessions", {"limit": 1}],
        ["list_runs", {}],
    ])
    assert set(out["tools"]) == TOOL_NAMES
    assert all(tool["read_only"] is True for tool in out["tools"].values())
    assert out["tools"]["search_frames"]["inputs"] == ["filter", "limit", "offset", "session"]
    listed, bad, errors, summary, initialize, first, runs = (call["result"] for call in out["calls"])
    assert runs["total"] >= 1 and any("demo" in r["servers"] for r in runs["runs"])
    assert [s["label"] for s in listed["sessions"]] == ["demo", "demo-http"]
    assert all(s["analysed"] and s["handle"] and s["id"].endswith(s["handle"]) for s in listed["sessions"])
    assert {f["kind"] for f in bad["frames"]} == {"unparseable", "invalid"}
    codes = {f["code"] for f in errors["findings"]}
    assert "parse-error" in codes
    parse = next(f for f in errors["findings"] if f["code"] == "parse-error")
    assert "JSON-RPC 2.0" in parse["reference"] and parse["explanation"]
    assert summary["session"]["label"] == "demo" and summary["note"] is None
    assert {"severity": "error", "code": "parse-error", "count": 1} in summary["findings"]
    assert any(m["method"] == "tools/call" and m["kind"] == "request" for m in summary["messages"])
    assert first["total"] == 2 and len(first["sessions"]) == 1 and first["next_offset"] == 1
    # a frame and its pair, through the answer of search_frames
    response = initialize["frames"][0]
    out = _drive(face, recording, [["get_frame", {"session": "demo", "seq": response["seq"]}]])
    got = out["calls"][0]["result"]
    assert json.loads(got["frame"]["text"])["result"]["serverInfo"]["name"] == "mcptap-demo-server"
    assert got["pair"]["seq"] == response["paired_frame"] and json.loads(got["pair"]["text"])["method"] == "initialize"
    assert hashlib.sha256(recording.read_bytes()).hexdigest() == before, "the face wrote to the database"


def test_bad_arguments_are_one_line_tool_errors_and_the_server_goes_on(face, recording):
    out = _drive(face, recording, [
        ["search_frames", {"filter": "kind =="}],
        ["get_frame", {"session": "no-such-session", "seq": 1}],
        ["get_frame", {"session": "demo", "seq": 999999}],
        ["list_findings", {"severity": "fatal"}],
        ["list_sessions", {"limit": 100000}],
    ])
    errors = [call.get("error", "") for call in out["calls"][:4]]
    assert "the filter does not parse" in errors[0]
    assert "no session 'no-such-session'" in errors[1]
    assert "has no frame 999999" in errors[2]
    assert "severity is one of error, warning, info" in errors[3]
    assert all("Traceback" not in e and "\n" not in e.strip() for e in errors)
    assert len(out["calls"][4]["result"]["sessions"]) == 2  # a limit past 100 is cut to 100, not refused


def test_without_the_extra_it_says_what_to_install(tmp_path):
    done = run(mcptap("mcp", "--db", str(tmp_path / "x.db")))
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "mcptap: error: mcptap mcp needs mcp: pip install 'mcptap[mcp]'"
