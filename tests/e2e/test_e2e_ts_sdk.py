"""End to end with the real TypeScript SDK client (npm, pinned in npm_servers.py: v1
@modelcontextprotocol/sdk 1.32.2, v2 @modelcontextprotocol/client 2.4.0 in its 'legacy' and 'auto'
modes) against the servers the tests already run (server-everything, the Python SDK's test server,
mcp-server-time) and a TypeScript SDK v2 server (tests/tools/ts_server.mjs, both eras), over stdio
through `mcptap record`; the Python SDK client drives the TypeScript server too. One recording per
(client, server), shared by its tests. The recorded frames must equal what a wiretap saw, and the
traffic is real and correct: no error and no warning."""

import pytest

from tests.conftest import EVERYTHING_PROBES, assert_no_false_findings, assert_no_security_findings, tool
from tests.support.plan_clients import (PY_CLIENTS, TS_CLIENTS, client_id, messages, record_stdio, session_frames,
                                        tapped_frames)

HANDSHAKE = "2025-11-25"  # the newest handshake revision: what every server here answers to `initialize`
MODERN = "2026-07-28"

PLANS = {
    "everything": {
        "calls": [["echo", {"message": "héllo ✓"}], ["get-sum", {"a": 2, "b": 40}],
                  ["trigger-sampling-request", {"prompt": "say hi", "maxTokens": 16}],
                  ["trigger-elicitation-request", {}], ["get-roots-list", {}], ["no-such-tool", {}]],
        "progress": ["trigger-long-running-operation", {"duration": 0.2, "steps": 4}],
        "cancel": ["trigger-long-running-operation", {"duration": 2, "steps": 10}, 300],
        "reads": ["demo://resource/dynamic/text/1"],
        "prompts": [["simple-prompt", {}], ["args-prompt", {"city": "Paris", "state": "Île-de-France"}]],
        "complete": [[{"type": "ref/prompt", "name": "completable-prompt"}, "department", "E"]],
        "subscribe": "demo://resource/dynamic/text/1",
    },
    "sdk": {"calls": [["echo", {"text": "héllo ✓"}], ["add", {"a": 2, "b": 40}]],
            "progress": ["slow", {"steps": 3}]},
    "time": {"calls": [["get_current_time", {"timezone": "UTC"}],
                       ["convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}]]},
    "ts": {
        "calls": [["echo", {"text": "héllo ✓"}], ["add", {"a": 2, "b": 40}], ["note", {"line": "a log line"}]],
        "progress": ["slow", {"steps": 3}],
        "cancel": ["wait", {}, 300],
        "reads": ["mcptap://readme"],
        "prompts": [["colour", {"colour": "red"}]],
        "complete": [[{"type": "ref/prompt", "name": "colour"}, "colour", "r"]],
    },
}
# What each server speaks: server-everything is built on the TypeScript SDK 1.32 (handshake only);
# the Python SDK 2.3.0 servers and the TypeScript SDK v2 server speak both eras.
SPEAKS_MODERN = {"everything": False, "sdk": True, "time": True, "ts": True}
CASES = [(client, server) for server in ("everything", "sdk", "time", "ts") for client in TS_CLIENTS] + \
        [(client, "ts") for client in PY_CLIENTS]


def expected_revision(client: tuple[str, str], server: str) -> str:
    return MODERN if client[1] == "auto" and SPEAKS_MODERN[server] else HANDSHAKE


def server_argv(request, server: str) -> list[str]:
    if server == "everything":
        return request.getfixturevalue("everything_server")
    if server == "sdk":
        return [request.getfixturevalue("sdk_python"), tool("sdk_server.py")]
    if server == "time":
        return request.getfixturevalue("time_server")
    from tests.support.npm_servers import npm_tools
    request.getfixturevalue("ts_sdk")
    return [npm_tools()[0], tool("ts_server.mjs"), "stdio"]


@pytest.fixture(scope="module", params=CASES, ids=[f"{client_id(c)}-{s}" for c, s in CASES])
def recording(request, make_client, tmp_path_factory):
    client, server = request.param
    plan = dict(PLANS[server])
    argv = server_argv(request, server)
    if server == "ts":  # the server needs to find the SDK; the Python client passes only what the plan says
        plan["env"] = {"MCPTAP_TS_SDK": str(request.getfixturevalue("ts_sdk"))}
    folder = tmp_path_factory.mktemp(f"{client_id(client)}-{server}")
    return client, server, record_stdio(make_client(*client), plan, argv, folder, server)


def test_the_client_gets_what_the_server_offers_through_the_tee(recording):
    client, server, rec = recording
    out = rec.out
    texts = [call["text"] for call in out["calls"]]
    if server == "everything":
        assert texts[:2] == ["Echo: héllo ✓", "The sum of 2 and 40 is 42."]
        assert out["server_requests"].get("sampling/createMessage") == 1
        assert out["server_requests"].get("elicitation/create") == 1
        assert out["calls"][-1]["is_error"] is True  # no-such-tool
        assert out["cancel"] == "cancelled"
        assert out["completions"] == [["Engineering"]]
    elif server == "sdk":
        assert texts == ["héllo ✓", "42"] and out["progress_result"] == "done after 3 steps"
    elif server == "time":
        assert '"timezone": "UTC"' in texts[0] and "Asia/Tokyo" in texts[1]
    else:
        assert texts == ["héllo ✓", "42", "noted a log line"] and out["progress_result"] == "done after 3 steps"
        assert out["cancel"] == "cancelled" and out["completions"] == [["red"]]
        assert out["reads"] == [["héllo from the TypeScript SDK ✓"]]


def test_every_line_each_way_is_recorded_in_order_per_process(recording):
    client, server, rec = recording
    recorded, tapped = session_frames(rec.db), tapped_frames(rec.taps)
    # the v2 client's 'auto' probe runs on a sibling process: two sessions, the probe's first
    assert len(recorded) == (2 if client == ("v2", "auto") else 1)
    assert recorded == tapped


def test_the_session_settles_on_the_revision_both_sides_speak(recording):
    client, server, rec = recording
    c2s = messages(rec.db, "c2s")
    revision = expected_revision(client, server)
    if revision == MODERN:
        assert not any(m.get("method") == "initialize" for m in c2s)
        requests = [m for m in c2s if "id" in m and "method" in m]
        assert all(m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN for m in requests)
    else:
        initialize = next(m for m in c2s if m.get("method") == "initialize")
        assert initialize["params"]["protocolVersion"] == HANDSHAKE


def test_real_traffic_from_the_typescript_sdk_gets_no_error_or_warning(recording):
    client, server, rec = recording
    report = assert_no_false_findings(rec.db, deliberate=EVERYTHING_PROBES if server == "everything" else ())
    assert_no_security_findings(report)
    *_, main = report["sessions"]
    assert main["revision"] == expected_revision(client, server)
