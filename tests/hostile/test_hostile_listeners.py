"""Local HTTP listeners against DNS rebinding: a real `mcptap serve
--listen` and a real `mcptap proxy` in front of the real `mcp` SDK server (its DNS-rebinding
protection on, as it turns it on for 127.0.0.1), sent raw HTTP requests with forged Host, Origin
and Content-Type. What the upstream really got is read off a byte-logging relay between the proxy
and the SDK server; what was recorded, off the database file."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import mcptap, run, wait_for
from tests.support.http_helpers import Relay, http_messages, mcptap_proxy, sdk_client, sdk_http_server

TIMEOUT_S = 15
EVIL = "evil.example"
TOOL_RESULT = "the-recorded-tool-result"
USER, PASSWORD = "mcptap-user", "pw-3f9c-not-for-the-db"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}


def request(port: int, *, host: str, origin: str | None = None, method: str = "POST",
            content_type: str | None = "application/json", body: dict | None = None,
            headers: tuple[tuple[str, str], ...] = ()) -> tuple[int, bytes]:
    """One raw HTTP/1.1 request on a connection of its own (closed after it): (status, the rest)."""
    data = json.dumps(body).encode() if body is not None else b""
    lines = [f"{method} /mcp HTTP/1.1", f"Host: {host}", "Accept: application/json, text/event-stream",
             "Connection: close", f"Content-Length: {len(data)}"]
    lines += [f"Origin: {origin}"] if origin is not None else []
    lines += [f"Content-Type: {content_type}"] if content_type is not None else []
    lines += [f"{name}: {value}" for name, value in headers]
    got = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + data)
        while chunk := sock.recv(65536):
            got += chunk
    status = re.match(rb"HTTP/1\.[01] (\d{3}) ", got)
    assert status, bytes(got[:200])
    return int(status.group(1)), bytes(got)


def error_code(answer: bytes) -> int:
    """The JSON-RPC error code of a refusal's body."""
    return json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"]


# -- mcptap serve --listen ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A session whose tools/call answer is TOOL_RESULT, imported from a frame-log."""
    folder = tmp_path_factory.mktemp("listeners")
    log = folder / "rec.jsonl"
    frames = [("c2s", INITIALIZE),
              ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                             "serverInfo": {"name": "rec", "version": "1"}}}),
              ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
              ("c2s", CALL),
              ("s2c", {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": TOOL_RESULT}]}})]
    log.write_text("".join(json.dumps({"session": "rec", "seq": i + 1, "ts": 1764460800 + i, "direction": d,
                                       "raw": json.dumps(m)}) + "\n" for i, (d, m) in enumerate(frames)),
                   encoding="utf-8")
    db = folder / "rec.db"
    result = run(mcptap("import", "--db", str(db), str(log)))
    assert result.returncode == 0, result.stderr.decode()
    return db


@contextlib.contextmanager
def serving(db: Path, *extra: str):
    """`mcptap serve --listen 127.0.0.1:0`; yields its port; stops it and checks it exits 0."""
    proc = subprocess.Popen(mcptap("serve", "--db", str(db), "rec", "--listen", "127.0.0.1:0", *extra),
                            stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert found, line + proc.stderr.read().decode()
        yield int(found.group(1))
    finally:
        proc.terminate()
        try:
            status = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.stderr.close()
    assert status == 0


@pytest.fixture(scope="module")
def serve_port(recording):
    with serving(recording) as port:
        yield port


def test_serve_refuses_the_dns_rebinding_request_a_browser_sends_without_preflight(serve_port):
    """The issue's request: a rebound name, its page's Origin, and text/plain (no CORS preflight)."""
    status, answer = request(serve_port, host=f"{EVIL}:{serve_port}", origin=f"http://{EVIL}:{serve_port}",
                             content_type="text/plain", body=CALL)
    assert status == 421 and TOOL_RESULT.encode() not in answer


@pytest.mark.parametrize("host", [f"{EVIL}", f"{EVIL}:{{port}}", "localhost.evil.example:{port}", "127.0.0.1.evil:{port}",
                                  "", "[::2]:{port}"])
def test_serve_answers_a_host_that_is_not_this_machine_with_421_and_not_the_recording(serve_port, host):
    status, answer = request(serve_port, host=host.format(port=serve_port), body=CALL)
    assert status == 421 and error_code(answer) == -32000 and TOOL_RESULT.encode() not in answer


@pytest.mark.parametrize("origin", [f"http://{EVIL}", f"http://{EVIL}:{{port}}", "null", "http://localhost.evil.example",
                                    "file://", "chrome-extension://abcdef"])
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_serve_answers_a_foreign_origin_with_403_on_every_method(serve_port, origin, method):
    status, answer = request(serve_port, host=f"127.0.0.1:{serve_port}", origin=origin.format(port=serve_port),
                             method=method, body=CALL if method == "POST" else None)
    assert status == 403 and error_code(answer) == -32000 and TOOL_RESULT.encode() not in answer


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          None, "application/json-seq"])
def test_serve_answers_a_post_that_is_not_json_with_415(serve_port, content_type):
    status, answer = request(serve_port, host=f"localhost:{serve_port}", content_type=content_type, body=CALL)
    assert status == 415 and TOOL_RESULT.encode() not in answer


@pytest.mark.parametrize("host, origin", [
    ("127.0.0.1:{port}", None), ("localhost:{port}", "http://localhost:6274"), ("[::1]:{port}", "http://[::1]:{port}"),
    ("LOCALHOST:{port}", "https://127.0.0.1"), ("127.0.0.1:9", "http://127.0.0.1:{port}"),  # a relay's port
])
def test_serve_answers_local_hosts_and_origins_and_clients_that_send_no_origin(serve_port, host, origin):
    status, answer = request(serve_port, host=host.format(port=serve_port),
                             origin=origin.format(port=serve_port) if origin else None,
                             content_type="application/json; charset=utf-8", body=CALL)
    assert status == 200 and TOOL_RESULT.encode() in answer


def test_serve_allow_origin_widens_to_that_origin_and_its_host_and_star_to_any(recording):
    app = "https://app.example.com"
    with serving(recording, "--allow-origin", app) as port:
        assert request(port, host=f"127.0.0.1:{port}", origin=app, body=CALL)[0] == 200
        assert request(port, host=f"app.example.com:{port}", body=CALL)[0] == 200
        assert request(port, host=f"127.0.0.1:{port}", origin="https://other.example.com", body=CALL)[0] == 403
        assert request(port, host=f"127.0.0.1:{port}", origin="http://app.example.com", body=CALL)[0] == 403
    with serving(recording, "--allow-origin", "*") as port:
        status, answer = request(port, host=EVIL, origin=f"http://{EVIL}", body=CALL)
        assert status == 200 and TOOL_RESULT.encode() in answer
        assert request(port, host=EVIL, content_type="text/plain", body=CALL)[0] == 415  # still JSON only


@pytest.mark.parametrize("command", ["serve", "proxy"])
@pytest.mark.parametrize("value", ["evil.example", "http://user@evil.example/path"])
def test_an_allow_origin_that_is_not_an_origin_is_a_one_line_error(recording, command, value):
    where = ("rec", "--listen", "127.0.0.1:0") if command == "serve" else ("--upstream", "http://127.0.0.1:9/mcp")
    result = run(mcptap(command, "--db", str(recording), *where, "--allow-origin", value), timeout=60)
    err = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


# -- mcptap proxy in front of the SDK server ---------------------------------------------------

@pytest.fixture(scope="module")
def upstream(sdk_python):
    """The SDK server (DNS-rebinding protection on) behind a relay that logs what reached it;
    yields the relay."""
    with sdk_http_server(sdk_python, "streamable") as url:
        relay = Relay(int(url.rsplit(":", 1)[1]))
        try:
            yield relay
        finally:
            relay.close()


def upstream_requests(relay: Relay) -> list[dict]:
    """Every request the upstream got so far, as sent."""
    return [req for connection in list(relay.connections) for req, _ in http_messages(connection)]


def recorded(db: Path, query: str, *args) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def proxy_db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("proxy") / "p.db"


@pytest.fixture(scope="module")
def proxy(upstream, proxy_db):
    with mcptap_proxy(proxy_db, f"http://127.0.0.1:{upstream.port}/mcp") as running:
        yield running, int(running.url.rsplit(":", 1)[1])


def test_the_sdk_client_works_through_the_proxy_with_the_sdk_servers_host_and_origin_checks_on(
        sdk_python, upstream, proxy):
    running, _ = proxy
    got = sdk_client(sdk_python, "legacy", "streamable", running.url + "/mcp")
    assert got["echo"] == "héllo ✓"
    hosts = {req["headers"].get("host") for req in upstream_requests(upstream)}
    assert hosts == {f"127.0.0.1:{upstream.port}"}  # what the SDK server checks


@pytest.mark.parametrize("origin", [f"http://{EVIL}", f"http://{EVIL}:{{port}}", "null"])
def test_the_proxy_refuses_a_foreign_origin_itself_and_records_the_refused_exchange_without_frames(
        upstream, proxy, proxy_db, origin):
    running, port = proxy
    marker = f"refused-origin-{origin.encode().hex()}"
    body = {**INITIALIZE, "params": {**INITIALIZE["params"], "clientInfo": {"name": marker, "version": "1"}}}
    status, answer = request(port, host=f"127.0.0.1:{port}", origin=origin.format(port=port), body=body)
    assert status == 403 and error_code(answer) == -32000
    assert not [r for r in upstream_requests(upstream) if marker.encode() in r["body"]]  # never went upstream

    def stored() -> list[tuple]:
        return recorded(proxy_db, "SELECT id, status, outcome, request_headers FROM exchanges "
                                  "WHERE status = 403 AND request_headers LIKE ?", f"%{origin.format(port=port)}%")
    rows = wait_for(stored, TIMEOUT_S, "the refused exchange to be stored")
    assert [row[2] for row in rows] == ["refused: origin not allowed (403)"]
    assert recorded(proxy_db, "SELECT count(*) FROM frames WHERE exchange_id = ?", rows[0][0]) == [(0,)]
    assert not recorded(proxy_db, "SELECT 1 FROM frames WHERE CAST(raw AS BLOB) LIKE ?", f"%{marker}%")


@pytest.mark.parametrize("host", [f"{EVIL}:{{port}}", EVIL, "localhost.evil.example:{port}"])
def test_the_proxy_refuses_a_rebound_host_instead_of_rewriting_it_into_the_upstreams(upstream, proxy, host):
    running, port = proxy
    before = len(upstream_requests(upstream))
    status, answer = request(port, host=host.format(port=port), body=INITIALIZE)
    assert status == 421 and b'"serverInfo"' not in answer
    assert len(upstream_requests(upstream)) == before


def test_the_upstream_gets_its_own_host_for_a_local_one_and_the_clients_origin_as_sent(upstream, proxy):
    running, port = proxy
    origin = "http://localhost:6274"  # a local web client (the MCP Inspector's port)
    status, answer = request(port, host=f"localhost:{port}", origin=origin, body=INITIALIZE)
    assert status == 200 and b'"serverInfo"' in answer  # the SDK server's own checks passed
    sent = [r for r in upstream_requests(upstream) if r["headers"].get("origin") == origin]
    assert [r["headers"]["host"] for r in sent] == [f"127.0.0.1:{upstream.port}"]


def test_the_proxy_allow_origin_lets_that_origin_through_for_the_upstream_to_judge(upstream, tmp_path):
    app, other = "http://app.example:3000", f"http://{EVIL}:3000"
    with mcptap_proxy(tmp_path / "a.db", f"http://127.0.0.1:{upstream.port}/mcp", "--allow-origin", app) as running:
        port = int(running.url.rsplit(":", 1)[1])
        status, answer = request(port, host=f"127.0.0.1:{port}", origin=app, body=INITIALIZE)
        assert status == 403 and b"Invalid Origin header" in answer  # the SDK server's own refusal, not the proxy's
        assert request(port, host=f"127.0.0.1:{port}", origin=other, body=INITIALIZE)[0] == 403
    origins = [r["headers"].get("origin") for r in upstream_requests(upstream)]
    assert app in origins and other not in origins


def test_upstream_credentials_become_basic_auth_unless_the_client_sends_its_own_and_are_never_stored_or_printed(
        upstream, tmp_path):
    db = tmp_path / "auth.db"
    with mcptap_proxy(db, f"http://{USER}:{PASSWORD}@127.0.0.1:{upstream.port}/mcp") as running:
        port = int(running.url.rsplit(":", 1)[1])
        mine = {**INITIALIZE, "id": "mine"}
        theirs = {**INITIALIZE, "id": "theirs"}
        assert request(port, host=f"127.0.0.1:{port}", body=mine)[0] == 200
        assert request(port, host=f"127.0.0.1:{port}", body=theirs, headers=(("Authorization", "Bearer own-token"),))[0] == 200

        def sent(ident: str) -> list[str]:
            return [r["headers"].get("authorization") for r in upstream_requests(upstream)
                    if f'"id": "{ident}"'.encode() in r["body"]]
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        assert sent("mine") == [expected] and sent("theirs") == ["Bearer own-token"]
        wait_for(lambda: recorded(db, "SELECT count(*) FROM exchanges")[0][0] >= 2, TIMEOUT_S, "the exchanges stored")
        assert running.stop() == 0
    secrets = (PASSWORD.encode(), expected.split()[1].encode(), base64.b64encode(PASSWORD.encode()))
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("auth.db"))
    assert not [s for s in secrets if s in stored]
    assert recorded(db, "SELECT DISTINCT upstream FROM sessions") == [(f"http://127.0.0.1:{upstream.port}",)]
    assert PASSWORD not in running.errors and USER not in running.errors
