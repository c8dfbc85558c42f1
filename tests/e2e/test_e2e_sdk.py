"""End to end with the real `mcp` SDK: its stdio client drives a real server (an SDK server, and
the PyPI server mcp-server-time) through `mcptap record`. A wiretap between the client and the
tee logs the exact bytes the client wrote and read; the recorded frames must equal those lines,
in order, per direction."""

import json
import sys

import pytest

from tests.conftest import assert_no_false_findings, assert_no_security_findings, frames, run, tee, tool


def lines_of(path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


@pytest.mark.parametrize("mode, version", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
@pytest.mark.parametrize("server", ["sdk", "time"])
def test_the_sdk_client_and_a_real_server_talk_through_the_tee_and_every_line_is_recorded(
        tmp_path, db, sdk_python, time_server, server, mode, version):
    server_argv = [sdk_python, tool("sdk_server.py")] if server == "sdk" else time_server
    taplog = tmp_path / "tap"
    taplog.mkdir()
    chain = [sys.executable, tool("wiretap.py"), str(taplog), "--", *tee(db, *server_argv, name=server)]
    result = run([sdk_python, tool("sdk_client.py"), mode, server, "--", *chain], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    out = json.loads(result.stdout)
    assert out["protocol_version"] == version
    if server == "sdk":
        assert (out["echo"], out["add"], out["progress"]) == ("héllo ✓", "42", [1.0, 2.0, 3.0])
    else:
        assert out["time"] == "UTC"
    assert frames(db, "c2s") == lines_of(taplog / "c2s.bin")
    assert frames(db, "s2c") == lines_of(taplog / "s2c.bin")
    assert len(frames(db)) >= 6
    assert b"mcptap" not in result.stderr  # the tee had nothing to complain about
    report = assert_no_false_findings(db)  # real traffic: the analyzer finds nothing wrong
    assert_no_security_findings(report)
    (summary,) = report["sessions"]
    assert (summary["revision"], summary["revision_source"]) == (version, "meta" if mode == "auto" else "initialize")
