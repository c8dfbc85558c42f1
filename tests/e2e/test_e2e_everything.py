"""End to end against the reference server @modelcontextprotocol/server-everything (from npm, pinned
in npm_servers.py): the real `mcp` SDK client drives all of it that the SDK can (tools, progress,
logging, sampling, elicitation, roots, resources, subscriptions, prompts, completions) through
`mcptap record`, with a wiretap between the client and the tee logging the exact bytes each way.
One session per mode, shared by that mode's tests. The traffic is real and correct: it is the
reference later tests hold the analyzer to (no false findings)."""

import json
import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import (EVERYTHING_PROBES, assert_no_false_findings, assert_no_security_findings, frames, mcptap,
                            run, tee, tool)
from tests.support.inprocess import cli

# server-everything 2026.8.31 is built on the TypeScript SDK 1.32, whose newest revision is
# 2025-11-25: in 'auto' mode the client's server/discover probe is refused and it falls back.
NEGOTIATED = "2025-11-25"
SESSION_TIMEOUT_S = 60

REQUESTS = {
    "c2s": {"initialize", "ping", "logging/setLevel", "tools/list", "tools/call", "resources/list",
            "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
            "prompts/list", "prompts/get", "completion/complete"},
    "s2c": {"roots/list", "sampling/createMessage", "elicitation/create"},
}
NOTIFICATIONS = {
    "c2s": {"notifications/initialized"},
    "s2c": {"notifications/tools/list_changed", "notifications/progress", "notifications/message",
            "notifications/resources/list_changed", "notifications/resources/updated"},
}


@dataclass
class Session:
    mode: str
    returncode: int
    stdout: bytes
    stderr: bytes
    db: Path
    taplog: Path

    def out(self) -> dict:
        assert self.returncode == 0, self.stderr.decode(errors="replace")[-3000:]
        return json.loads(self.stdout)

    def messages(self, direction: str) -> list[dict]:
        self.out()
        return [json.loads(raw) for raw in frames(self.db, direction)]


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


@pytest.fixture(scope="module", params=["legacy", "auto"])
def session(request, tmp_path_factory, sdk_python, everything_server) -> Session:
    """One recorded session of the SDK client against server-everything, in the given mode."""
    mode = request.param
    folder = tmp_path_factory.mktemp(f"everything-{mode}")
    db, taplog = folder / "rec.db", folder / "tap"
    taplog.mkdir()
    chain = [sys.executable, tool("wiretap.py"), str(taplog), "--", *tee(db, *everything_server, name="everything")]
    result = run([sdk_python, tool("sdk_client_everything.py"), mode, "--", *chain], timeout=SESSION_TIMEOUT_S)
    return Session(mode, result.returncode, result.stdout, result.stderr, db, taplog)


def test_the_sdk_client_drives_every_feature_of_server_everything_through_the_tee(session):
    out = session.out()
    assert out["protocol_version"] == NEGOTIATED
    assert out["server"].startswith("mcp-servers/everything ")
    assert {"echo", "get-sum", "trigger-long-running-operation", "trigger-sampling-request",
            "trigger-elicitation-request", "trigger-url-elicitation", "get-roots-list"} <= set(out["tools"])
    assert (out["echo"], out["sum"]) == ("Echo: héllo ✓", "The sum of 2 and 40 is 42.")
    assert out["progress"] == [[1.0, 4.0], [2.0, 4.0], [3.0, 4.0], [4.0, 4.0]]
    assert out["unknown_tool"]["is_error"] is True
    assert out["roots_list"] == "Current MCP Roots (1 total):"
    assert out["sampling"] and out["elicitation"]
    assert out["url_elicitation_required"] == -32042
    assert out["server_requests"] == {"sampling": ["Resource trigger-sampling-request context: say hi"],
                                      "elicitation": ["form", "url", "url"], "roots": 1}
    assert out["templates"] == ["demo://resource/dynamic/blob/{resourceId}", "demo://resource/dynamic/text/{resourceId}"]
    assert (out["dynamic_text"], out["dynamic_blob"]) == ("Resource 1", "Resource 2")
    assert out["gzip"] == ["demo://resource/session/mcptap.txt.gz", "application/gzip"]
    assert out["prompt_messages"] == {"simple-prompt": 1, "args-prompt": 1, "completable-prompt": 1, "resource-prompt": 2}
    assert out["completions"] == [["Engineering"], ["Alice"], ["7"]]
    assert out["notifications"]["notifications/resources/updated"] >= 1
    assert any(log["data"].startswith("Roots updated") for log in out["logs"])


def test_every_line_of_a_server_everything_session_is_recorded_in_order_per_direction(session):
    session.out()
    assert frames(session.db, "c2s") == lines_of(session.taplog / "c2s.bin")
    assert frames(session.db, "s2c") == lines_of(session.taplog / "s2c.bin")
    assert len(frames(session.db)) >= 100
    conn = sqlite3.connect(session.db)
    stderr_lines = [row[0] for row in conn.execute("SELECT raw FROM stderr_lines ORDER BY seq")]
    incomplete = conn.execute("SELECT count(*) FROM frames WHERE incomplete").fetchone()[0]
    conn.close()
    assert stderr_lines == ["Starting default (STDIO) server..."]
    assert incomplete == 0
    assert b"mcptap" not in session.stderr  # the tee had nothing to complain about


def test_each_request_in_a_server_everything_recording_has_exactly_one_response_from_the_other_side(session):
    sent = {d: session.messages(d) for d in ("c2s", "s2c")}
    for direction, other in (("c2s", "s2c"), ("s2c", "c2s")):
        assert all(m.get("jsonrpc") == "2.0" for m in sent[direction])
        requests = [m for m in sent[direction] if "method" in m and "id" in m]
        notifications = {m["method"] for m in sent[direction] if "method" in m and "id" not in m}
        expected = REQUESTS[direction] | ({"server/discover"} if session.mode == "auto" and direction == "c2s" else set())
        assert {m["method"] for m in requests} == expected
        assert notifications == NOTIFICATIONS[direction]
        ids = Counter(m["id"] for m in requests)
        assert max(ids.values()) == 1, f"{direction} reuses a request id: {ids.most_common(1)}"
        responses = Counter(m["id"] for m in sent[other] if "method" not in m)
        assert responses == ids  # ids are per sender: both sides count from 0 or 1 on their own


def test_the_handshake_on_the_wire_follows_the_mode_and_settles_on_2025_11_25(session):
    c2s, s2c = session.messages("c2s"), session.messages("s2c")
    if session.mode == "auto":
        probe, refusal = c2s[0], s2c[0]
        assert probe["method"] == "server/discover"
        assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert refusal == {"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "Method not found"}}
        c2s, s2c = c2s[1:], s2c[1:]
    initialize, initialized = c2s[0], c2s[1]
    assert initialize["method"] == "initialize" and initialize["params"]["protocolVersion"] == NEGOTIATED
    assert set(initialize["params"]["capabilities"]) == {"sampling", "elicitation", "roots"}
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert s2c[0]["id"] == initialize["id"] and s2c[0]["result"]["protocolVersion"] == NEGOTIATED


def test_real_traffic_with_server_everything_gets_no_error_or_warning(session):
    session.out()
    report = assert_no_false_findings(session.db, deliberate=EVERYTHING_PROBES)
    assert_no_security_findings(report)
    (summary,) = report["sessions"]
    assert (summary["revision"], summary["revision_source"]) == (NEGOTIATED, "initialize")
    # auto mode: the client's 2026-07-28 probe (server/discover) is refused, and it falls back to
    # initialize: "An initialize request selects legacy semantics" (S/2026-07-28/basic/versioning)


def test_cost_of_server_everything_prices_each_of_its_tools_with_the_tokenizer_named(session):
    session.out()
    figures = json.loads(cli("cost", "--db", str(session.db), "--format", "json").stdout)
    (server,) = figures["servers"]
    tools = {t["name"]: t for t in server["definitions"]["tools"]}
    assert {"echo", "get-sum"} <= set(tools) and all(t["model_tokens"] > 0 for t in tools.values())
    assert figures["tokenizer"] in ("o200k_base", "bytes/4 estimate")
    text = cli("cost", "--db", str(session.db)).stdout.decode()
    assert text.startswith(f"tokens: {figures['tokenizer']}")
    assert any(line.split()[:2] == ["tool", "get-sum"] for line in text.splitlines())
