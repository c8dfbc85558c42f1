"""The real TypeScript SDK over Streamable HTTP through `mcptap proxy`, with a byte-logging relay
between client and proxy as the oracle: the TypeScript client (v1 1.32.2; v2 2.4.0 'legacy' and
'auto') against server-everything, the Python SDK's HTTP test server and a TypeScript SDK v2 server
(tests/tools/ts_server.mjs: createMcpHandler, 2026-07-28 and, for 2025-era traffic, the stateless
fallback with `sessionIdGenerator: undefined` that answers the client's standalone GET with 405);
the Python SDK client against that TypeScript server (both eras) and, in 2026-07-28, the Python
server. One recording per (client, server)."""

import contextlib
import sqlite3

import pytest

from tests.conftest import analyze_json, tool
from tests.support.http_helpers import free_port, http_server, recorded_exchanges, wire_exchanges
from tests.support.plan_clients import PY_CLIENTS, TS_CLIENTS, client_id, record_http

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"

PLANS = {
    "everything": {
        "calls": [["echo", {"message": "héllo ✓"}], ["get-sum", {"a": 2, "b": 40}],
                  ["trigger-sampling-request", {"prompt": "say hi", "maxTokens": 16}],
                  ["trigger-elicitation-request", {}]],
        "progress": ["trigger-long-running-operation", {"duration": 0.2, "steps": 4}],
        "cancel": ["trigger-long-running-operation", {"duration": 2, "steps": 10}, 300],
        "reads": ["demo://resource/dynamic/text/1"],
        "prompts": [["simple-prompt", {}]],
        "complete": [[{"type": "ref/prompt", "name": "completable-prompt"}, "department", "E"]],
    },
    "sdk": {
        "calls": [["echo", {"text": "héllo ✓"}], ["ask", {}], ["sample", {"topic": "ponds"}]],
        "progress": ["slow", {"steps": 3}],
        "cancel": ["ticks", {"count": 100, "interval": 0.1}, 300],
    },
    "ts": {
        "calls": [["echo", {"text": "héllo ✓"}], ["add", {"a": 2, "b": 40}], ["note", {"line": "a log line"}]],
        "progress": ["slow", {"steps": 3}],
        "cancel": ["wait", {}, 300],
        "reads": ["mcptap://readme"],
        "prompts": [["colour", {"colour": "red"}]],
        "complete": [[{"type": "ref/prompt", "name": "colour"}, "colour", "r"]],
    },
}
# The Python test server's `ask` and `sample` send server requests: the handshake era only (in
# 2026-07-28 the server has no back-channel and says so with an error).
HANDSHAKE_ONLY_CALLS = {"ask", "sample"}
SPEAKS_MODERN = {"everything": False, "sdk": True, "ts": True}
CASES = [(client, "ts") for client in TS_CLIENTS + PY_CLIENTS] + \
        [(client, "everything") for client in (("v1", "legacy"), ("v2", "auto"))] + \
        [(client, "sdk") for client in (*TS_CLIENTS, ("python", "auto"))]


def expected_revision(client: tuple[str, str], server: str) -> str:
    return MODERN if client[1] == "auto" and SPEAKS_MODERN[server] else HANDSHAKE


def plan_for(client: tuple[str, str], server: str) -> dict:
    plan = dict(PLANS[server])
    if expected_revision(client, server) == MODERN:
        plan["calls"] = [call for call in plan["calls"] if call[0] not in HANDSHAKE_ONLY_CALLS]
    return plan


@contextlib.contextmanager
def upstream(request, server: str):
    port = free_port()
    if server == "everything":
        everything = request.getfixturevalue("everything_server")
        argv, env = [*everything[:2], "streamableHttp"], {"PORT": str(port)}
    elif server == "sdk":
        argv, env = [request.getfixturevalue("sdk_python"), tool("sdk_http_server.py"), "streamable", str(port)], {}
    else:
        from tests.support.npm_servers import npm_tools
        argv = [npm_tools()[0], tool("ts_server.mjs"), "http", str(port)]
        env = {"MCPTAP_TS_SDK": str(request.getfixturevalue("ts_sdk"))}
    with http_server(argv, port, env) as url:
        yield f"{url}/mcp"


@pytest.fixture(scope="module", params=CASES, ids=[f"{client_id(c)}-{s}" for c, s in CASES])
def recording(request, make_client, tmp_path_factory):
    client, server = request.param
    folder = tmp_path_factory.mktemp(f"{client_id(client)}-{server}-http")
    with upstream(request, server) as url:
        return client, server, record_http(make_client(*client), plan_for(client, server), url, folder)


def test_the_client_gets_what_the_server_offers_through_the_proxy(recording):
    client, server, rec = recording
    out = rec.out
    texts = [call["text"] for call in out["calls"]]
    if server == "everything":
        assert texts[:2] == ["Echo: héllo ✓", "The sum of 2 and 40 is 42."]
        assert out["server_requests"].get("sampling/createMessage") == 1
        assert out["server_requests"].get("elicitation/create") == 1
    elif server == "sdk":
        assert texts == (["héllo ✓"] if expected_revision(client, server) == MODERN else
                         ["héllo ✓", "hello Ada Lovelace", "the model said: a canned answer"])
    else:
        assert texts == ["héllo ✓", "42", "noted a log line"] and out["completions"] == [["red"]]
    assert out["cancel"] == "cancelled"
    assert out["protocol_version"] in (expected_revision(client, server), "handshake")


def test_everything_that_crossed_the_proxy_is_recorded_exactly(recording):
    _, _, rec = recording
    assert recorded_exchanges(rec.db) == wire_exchanges(rec.relay)


def frame_of(db, where: str, *args) -> int:
    conn = sqlite3.connect(db)
    (seq,) = conn.execute("SELECT f.seq FROM frames f JOIN exchanges e ON e.id = f.exchange_id WHERE " + where,
                          args).fetchone()
    conn.close()
    return seq


def probe_refusal(client, server, db) -> tuple[int, int] | None:
    """(frame of the refusal, frame of the probe) where the server refuses the v2 client's probe.
    server-everything (TypeScript SDK 1.32, sessions on) answers the server/discover probe, a POST
    without a session id, with HTTP 400 and {"jsonrpc":"2.0","error":{"code":-32000,"message":
    "Bad Request: Server not initialized"},"id":null}: a rejection by the transport (the HTTP status
    says it; the spec lets such a body have no id), which answers the probe and is no finding."""
    if (client, server) != (("v2", "auto"), "everything"):
        return None
    probe = frame_of(db, "f.direction = 'c2s' AND f.raw LIKE '%\"method\":\"server/discover\"%'")
    refusal = frame_of(db, "f.direction = 's2c' AND e.status = 400 AND f.raw LIKE '%\"id\":null%'")
    return refusal, probe


def test_real_http_traffic_from_the_typescript_sdk_gets_no_error_or_warning(recording):
    client, server, rec = recording
    status, report = analyze_json(rec.db, "--fail-on", "warning")
    loud = sorted((f["code"], f["frame"], f["related_frame"]) for f in report["findings"]
                  if f["severity"] in ("error", "warning"))
    assert loud == [] and status == 0
    refused = probe_refusal(client, server, rec.db)
    if refused is not None:  # the refusal answers the probe it refused
        conn = sqlite3.connect(rec.db)
        paired = conn.execute("SELECT paired_frame FROM messages WHERE frame_seq = ? AND idx IS NULL "
                              "AND direction = 's2c'", (refused[0],)).fetchall()
        conn.close()
        assert (refused[1],) in paired
    # a probe the server refuses is a sessionless POST: a session of its own, judged by its _meta
    probe = [MODERN] if client[1] == "auto" and not SPEAKS_MODERN[server] else []
    assert [s["revision"] for s in report["sessions"]] == [*probe, expected_revision(client, server)]
