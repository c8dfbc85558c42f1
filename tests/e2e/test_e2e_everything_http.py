"""The reference server @modelcontextprotocol/server-everything (npm, pinned in npm_servers.py)
over HTTP through `mcptap proxy`: Streamable HTTP and legacy HTTP+SSE, driven by the real `mcp`
SDK client through everything it can do (tests/tools/sdk_client_everything.py), with a
byte-logging relay between client and proxy as the oracle."""

import json
import sqlite3
import subprocess

import pytest

from tests.conftest import EVERYTHING_PROBES, assert_no_false_findings, assert_no_security_findings, tool
from tests.support.http_helpers import Relay, free_port, http_server, mcptap_proxy, recorded_exchanges, wire_exchanges

TRANSPORTS = {"streamableHttp": ("--url", "/mcp", "http"), "sse": ("--sse", "/sse", "sse")}


@pytest.fixture(scope="module", params=list(TRANSPORTS))
def recorded(request, everything_server, sdk_python, tmp_path_factory):
    transport = request.param
    how, path, kind = TRANSPORTS[transport]
    db = tmp_path_factory.mktemp(transport) / "everything.db"
    port = free_port()
    with http_server([*everything_server[:2], transport], port, {"PORT": str(port)}) as upstream, \
            mcptap_proxy(db, upstream) as proxy:
        relay = Relay(int(proxy.url.rsplit(":", 1)[1]))
        try:
            done = subprocess.run([sdk_python, tool("sdk_client_everything.py"), "legacy", how,
                                   f"http://127.0.0.1:{relay.port}{path}"], capture_output=True, timeout=90)
        finally:
            assert proxy.stop() == 0, proxy.errors
            relay.close()
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return kind, db, relay, json.loads(done.stdout.splitlines()[-1])


def test_everything_the_client_did_over_http_is_recorded_exactly(recorded):
    kind, db, relay, out = recorded
    assert out["server_requests"]["sampling"] and out["server_requests"]["elicitation"]
    assert recorded_exchanges(db) == wire_exchanges(relay)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT transport, ended_at IS NOT NULL FROM sessions").fetchall() == [(kind, 1)]
    conn.close()


def test_server_everything_over_http_gives_no_false_findings(recorded):
    _, db, _, _ = recorded
    report = assert_no_false_findings(db, deliberate=EVERYTHING_PROBES)
    assert_no_security_findings(report)
    assert report["sessions"][0]["revision"] == "2025-11-25" and report["sessions"][0]["frames"] > 90
