"""2026-07-28 request headers on real traffic through `mcptap proxy`: the real `mcp` SDK server
(tests/tools/sdk_header_server.py, a tool whose `region` argument is marked x-mcp-header) answering
requests whose headers disagree with their bodies (it refuses them 400 with HeaderMismatch -32020,
and an unknown method 404 with -32601), and the real Python and TypeScript SDK clients mirroring
Mcp-Method, Mcp-Name and Mcp-Param-Region: the header rules fire on the first and on nothing of the
second."""

import json
import sqlite3
import urllib.error
import urllib.request

import pytest

from tests.conftest import analyze_json, assert_no_false_findings, tool
from tests.support.http_helpers import free_port, http_server, mcptap_proxy
from tests.support.plan_clients import record_http

R = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": R, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
SQL = {"name": "sql", "arguments": {"region": "us-west1", "query": "select 1"}}
ECHO = {"name": "echo", "arguments": {"text": "hi"}}


@pytest.fixture(scope="module")
def header_server(sdk_python):
    port = free_port()
    with http_server([sdk_python, tool("sdk_header_server.py"), str(port)], port) as url:
        yield f"{url}/mcp"


def post(url: str, ident: int, method: str, params: dict, headers: dict) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": {**params, "_meta": META}})
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": R, **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as refused:
        refused.read()
        return refused.code


# (method, params, headers beyond MCP-Protocol-Version, the status the server answers, the header codes)
REQUESTS = [
    ("tools/list", {}, {"Mcp-Method": "tools/list"}, 200, set()),
    ("tools/call", SQL, {"Mcp-Method": "tools/call", "Mcp-Name": "sql", "Mcp-Param-Region": "us-west1"}, 200, set()),
    ("tools/call", SQL, {"Mcp-Method": "tools/call", "Mcp-Name": "sql", "Mcp-Param-Region": "eu-west1"}, 400,
     {"mcp-param-header-mismatch"}),
    ("tools/call", SQL, {"Mcp-Method": "tools/call", "Mcp-Name": "sql"}, 400, {"mcp-param-header-missing"}),
    ("tools/call", ECHO, {"Mcp-Method": "tools/call", "Mcp-Name": "other"}, 400, {"mcp-name-header-mismatch"}),
    ("tools/call", ECHO, {"Mcp-Method": "tools/call"}, 400, {"mcp-name-header-missing"}),
    ("tools/call", ECHO, {"Mcp-Name": "echo"}, 400, {"mcp-method-header-missing"}),
    ("tools/call", ECHO, {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZWNobw==?="}, 200, set()),
    ("nope/nothing", {}, {"Mcp-Method": "nope/nothing"}, 404, set()),
]
HEADER_CODES = {"mcp-method-header-missing", "mcp-method-header-mismatch", "mcp-name-header-missing",
                "mcp-name-header-mismatch", "mcp-param-header-missing", "mcp-param-header-mismatch",
                "header-mismatch-accepted", "header-mismatch-false", "error-http-status"}


def test_a_real_server_refusing_mismatched_headers_leaves_the_client_reported_and_itself_not(header_server, tmp_path):
    db = tmp_path / "raw.db"
    with mcptap_proxy(db, header_server) as proxy:
        statuses = [post(f"{proxy.url}/mcp", n, m, p, h) for n, (m, p, h, _, _) in enumerate(REQUESTS, 1)]
        assert proxy.stop() == 0, proxy.errors
    assert statuses == [status for _, _, _, status, _ in REQUESTS]
    _, report = analyze_json(db)
    conn = sqlite3.connect(db)
    seqs = [seq for (seq,) in conn.execute("SELECT seq FROM frames WHERE direction = 'c2s' ORDER BY seq")]
    conn.close()
    found = {}
    for f in report["findings"]:
        if f["code"] in HEADER_CODES:
            found.setdefault(seqs.index(f["frame"]), set()).add(f["code"])
    assert found == {n: codes for n, (_, _, _, _, codes) in enumerate(REQUESTS) if codes}


@pytest.mark.parametrize("client", [("python", "auto"), ("v2", "auto")])
def test_real_sdk_clients_mirroring_the_headers_get_no_finding(client, header_server, make_client, tmp_path):
    plan = {"calls": [["sql", {"region": "us-west1", "query": "select 1"}], ["echo", {"text": "héllo ✓"}]]}
    rec = record_http(make_client(*client), plan, header_server, tmp_path)
    assert [call["text"] for call in rec.out["calls"]] == ["select 1 ran in us-west1", "héllo ✓"]
    conn = sqlite3.connect(rec.db)
    headers = [json.loads(h) for (h,) in conn.execute("SELECT request_headers FROM exchanges WHERE method = 'POST'")]
    conn.close()
    names = {(n.lower(), v) for h in headers for n, v in h}
    assert ("mcp-param-region", "us-west1") in names and ("mcp-name", "sql") in names  # what the rules judged
    report = assert_no_false_findings(rec.db)
    assert report["sessions"][0]["revision"] == R


def test_a_real_servers_listen_stream_acknowledged_with_its_id_gets_no_subscription_finding(header_server, tmp_path):
    db = tmp_path / "listen.db"
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                       "params": {"_meta": META, "notifications": {"toolsListChanged": True}}})
    with mcptap_proxy(db, header_server) as proxy:
        request = urllib.request.Request(f"{proxy.url}/mcp", data=body.encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": R, "Mcp-Method": "subscriptions/listen"})
        with urllib.request.urlopen(request, timeout=30) as stream:
            lines = []
            while not any(b"acknowledged" in line for line in lines):
                line = stream.readline()
                assert line, lines  # the stream ended before the acknowledgment
                lines.append(line)
        assert proxy.stop() == 0, proxy.errors
    conn = sqlite3.connect(db)
    acked = conn.execute("SELECT count(*) FROM frames WHERE direction = 's2c' AND CAST(raw AS TEXT) LIKE "
                         "'%subscriptions/acknowledged%\"io.modelcontextprotocol/subscriptionId\":7%'").fetchone()[0]
    conn.close()
    assert acked == 1
    _, report = analyze_json(db)
    assert report["sessions"][0]["revision"] == R
    assert not [f for f in report["findings"] if f["code"].startswith("subscription-")]


def test_a_real_2026_07_28_oauth_flow_seen_forward_is_told_its_registration_and_missing_iss_as_info(
        sdk_python, tmp_path):
    """The `mcp` SDK's OAuth client and authorization server, through mitmdump with the addon (forward:
    the authorization redirect is recorded): it registers dynamically with application_type (no
    auth-application-type-missing) and the SDK's authorization server sends no iss, advertising none
    (auth-iss-missing, info); nothing louder."""
    import subprocess

    from tests.conftest import mcptap, run
    from tests.support.http_helpers import mitmdump
    from tests.support.oauth import running_oauth_server

    db = tmp_path / "rec.db"
    addon = run(mcptap("addon-path")).stdout.decode().strip()
    with running_oauth_server(sdk_python) as (_, rs):
        with mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
            done = subprocess.run([sdk_python, tool("sdk_oauth_client.py"), "auto", f"{rs}/mcp",
                                   f"http://127.0.0.1:{proxy['port']}"], capture_output=True, timeout=90)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert proxy["status"] == 0, proxy["errors"]
    report = assert_no_false_findings(db)
    assert report["sessions"][0]["revision"] == R
    auth = {(f["code"], f["severity"]) for f in report["findings"] if f["code"].startswith("auth-")}
    assert auth == {("auth-iss-missing", "info"), ("auth-dynamic-registration", "info")}
