"""`mcptap proxy` end to end: the real `mcp` SDK client and server (from the side environment),
a byte-logging relay between client and proxy as the oracle, real mitmproxy, a real database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import assert_no_false_findings, mcptap, run, wait_for
from tests.support.http_helpers import (Relay, free_port, mcptap_proxy, mitmdump, mitmdump_reverse, recorded_exchanges,
                                        sdk_client, sdk_http_server, wire_exchanges)

# (server mode, client transport, endpoint path, client mode, what the client calls)
CASES = {
    "streamable SSE answers, 2025-11-25": ("streamable", "streamable", "/mcp", "legacy", ("ask",)),
    "streamable SSE answers, 2026-07-28": ("streamable", "streamable", "/mcp", "auto", ()),
    "streamable JSON answers, 2025-11-25": ("json", "streamable", "/mcp", "legacy", ()),
    "streamable JSON answers, 2026-07-28": ("json", "streamable", "/mcp", "auto", ()),
    "legacy HTTP+SSE, 2024-11-05 transport": ("sse", "sse", "/sse", "legacy", ("ask",)),
}


def record_through_proxy(sdk_python, db, server_mode, transport, path, client_mode, what):
    with sdk_http_server(sdk_python, server_mode) as upstream, mcptap_proxy(db, upstream) as proxy:
        relay = Relay(int(proxy.url.rsplit(":", 1)[1]))
        try:
            out = sdk_client(sdk_python, client_mode, transport, f"http://127.0.0.1:{relay.port}{path}", *what)
        finally:
            status = proxy.stop()
            relay.close()
        assert status == 0, proxy.errors
    return out, relay


@pytest.mark.parametrize("case", list(CASES))
def test_every_message_through_the_proxy_is_recorded_once_in_order_byte_exact(sdk_python, tmp_path, case):
    db = tmp_path / "http.db"
    out, relay = record_through_proxy(sdk_python, db, *CASES[case])
    assert out["echo"] == "héllo ✓" and out["slow"] == "done after 3 steps"
    if "ask" in CASES[case][4]:
        assert out["ask"] == "hello mcptap"  # the server-to-client request was answered
    wire = wire_exchanges(relay)
    assert sum(wire.values()) >= 4  # discover or initialize, tools/list, two calls at least
    assert recorded_exchanges(db) == wire
    conn = sqlite3.connect(db)
    sessions = conn.execute("SELECT id, transport, ended_at FROM sessions").fetchall()
    assert len(sessions) == 1, sessions  # one client run is one session
    assert sessions[0][1] == ("sse" if CASES[case][1] == "sse" else "http") and sessions[0][2] is not None
    seqs = [r[0] for r in conn.execute("SELECT seq FROM frames ORDER BY ts, seq")]
    assert seqs == list(range(1, len(seqs) + 1))  # seq follows time
    conn.close()


@pytest.mark.parametrize("case", list(CASES))
def test_conformant_http_sessions_analyze_without_false_findings(sdk_python, tmp_path, case):
    db = tmp_path / "http.db"
    out, _ = record_through_proxy(sdk_python, db, *CASES[case])
    report = assert_no_false_findings(db)
    expected = "2026-07-28" if out["protocol_version"] == "2026-07-28" else out["protocol_version"]
    assert [s["revision"] for s in report["sessions"]] == [expected]


def test_progress_events_reach_the_client_live_and_are_stamped_as_they_pass(sdk_python, tmp_path):
    db = tmp_path / "live.db"
    with sdk_http_server(sdk_python, "streamable") as upstream, mcptap_proxy(db, upstream + "/mcp") as proxy:
        out = sdk_client(sdk_python, "legacy", "streamable", proxy.url + "/mcp", "ticks")
        assert proxy.stop() == 0, proxy.errors
    assert f"point the host at {proxy.url}/mcp" in proxy.errors  # the server's URL given: its path is said
    ticks = out["ticks"]
    assert len(ticks) == 10
    sent, received = ticks[0]
    assert received - sent < 1.0  # the first progress is not held back until the tool ends
    assert ticks[-1][0] - received > 2.0  # ... which is long after
    conn = sqlite3.connect(db)
    stamps = [ts for ts, raw in conn.execute("SELECT ts, CAST(raw AS BLOB) FROM frames ORDER BY seq")
              if b'"notifications/progress"' in raw]
    conn.close()
    assert len(stamps) == 10
    for (_, got), ts in zip(ticks, stamps):
        assert abs(ts - got) < 0.1


def test_a_bearer_token_leaves_no_trace_in_the_database(sdk_python, tmp_path):
    db = tmp_path / "secret.db"
    with sdk_http_server(sdk_python, "json") as upstream, mcptap_proxy(db, upstream) as proxy:
        import urllib.request

        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        request = urllib.request.Request(proxy.url + "/mcp?access_token=hunter2secret", data=body, method="POST", headers={
            "Authorization": "Bearer s3cr3t-token-value", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "Cookie": "sid=c00kie-value"})
        try:
            urllib.request.urlopen(request, timeout=10).read()
        except urllib.error.HTTPError as exc:  # whatever the server says, the request was recorded
            exc.read()
        assert proxy.stop() == 0, proxy.errors
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("secret.db"))
    for secret in (b"s3cr3t-token-value", b"hunter2secret", b"c00kie-value"):
        assert secret not in data
    conn = sqlite3.connect(db)
    headers, redacted, url = conn.execute("SELECT request_headers, redacted, url FROM exchanges").fetchone()
    conn.close()
    assert dict(map(tuple, json.loads(headers)))["Authorization"].startswith("Bearer [redacted:")
    assert set(json.loads(redacted)) >= {"authorization", "cookie", "query:access_token"}
    assert "access_token=[redacted:" in url


def test_keep_credentials_stores_the_headers_as_they_were(sdk_python, tmp_path):
    db = tmp_path / "kept.db"
    with sdk_http_server(sdk_python, "json") as upstream, mcptap_proxy(db, upstream, "--keep-credentials") as proxy:
        import urllib.request

        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        request = urllib.request.Request(proxy.url + "/mcp", data=body, method="POST", headers={
            "Authorization": "Bearer kept-token", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        try:
            urllib.request.urlopen(request, timeout=10).read()
        except urllib.error.HTTPError as exc:
            exc.read()
        assert proxy.stop() == 0, proxy.errors
    conn = sqlite3.connect(db)
    (headers,) = conn.execute("SELECT request_headers FROM exchanges").fetchone()
    conn.close()
    assert ["Authorization", "Bearer kept-token"] in json.loads(headers)


def test_proxy_on_a_port_in_use_is_a_one_line_error(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run(mcptap("proxy", "--db", str(tmp_path / "x.db"), "--upstream", "http://127.0.0.1:9",
                            "--listen", f"127.0.0.1:{port}"))
    assert result.returncode == 2
    assert result.stderr.decode().count("\n") == 1 and "in use" in result.stderr.decode()


@pytest.mark.parametrize("argv, says", [
    (["--upstream", "ftp://example"], "expected an http:// or https:// URL"),
    (["--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:http"], "expected [HOST:]PORT"),
])
def test_proxy_bad_arguments_are_one_line_errors(tmp_path, argv, says):
    result = run(mcptap("proxy", "--db", str(tmp_path / "x.db"), *argv))
    assert result.returncode == 2 and says in result.stderr.decode()
    assert result.stderr.decode().count("\n") == 1


def test_a_mitmdump_capture_and_its_har_import_to_the_frames_recorded_live(sdk_python, tmp_path):
    """client -> mcptap proxy (live.db) -> plain mitmdump (-w, hardump) -> SDK server: one session
    seen three ways."""
    live, dump, har = tmp_path / "live.db", tmp_path / "cap.mitm", tmp_path / "cap.har"
    with sdk_http_server(sdk_python, "streamable") as upstream, \
            mitmdump_reverse(upstream, "-w", str(dump), "--set", f"hardump={har}") as plain:
        with mcptap_proxy(live, f"http://127.0.0.1:{plain['port']}") as proxy:
            sdk_client(sdk_python, "legacy", "streamable", proxy.url + "/mcp")
            assert proxy.stop() == 0, proxy.errors
    seen = {}
    for name, source in (("live", None), ("flows", dump), ("har", har)):
        db = live if source is None else tmp_path / f"{name}.db"
        if source is not None:
            result = run(mcptap("import", "--db", str(db), str(source)))
            assert result.returncode == 0, result.stderr.decode()
        conn = sqlite3.connect(db)
        seen[name] = conn.execute("SELECT direction, CAST(raw AS BLOB) FROM frames ORDER BY session_id, seq").fetchall()
        conn.close()
    assert len(seen["live"]) >= 10
    assert seen["flows"] == seen["live"] and seen["har"] == seen["live"]
    assert_no_false_findings(tmp_path / "har.db")
    again = run(mcptap("import", "--db", str(tmp_path / "har.db"), str(har)))
    assert again.returncode == 2 and "already imported" in again.stderr.decode()


def addon_script() -> str:
    """What `mcptap addon-path` prints: the addon script's absolute path."""
    result = run(mcptap("addon-path"))
    assert result.returncode == 0, result.stderr
    path = result.stdout.decode().strip()
    assert Path(path).is_absolute() and Path(path).is_file(), path
    return path


def test_the_bare_addon_records_inside_mitmdump(sdk_python, tmp_path):
    db = tmp_path / "addon.db"
    addon = addon_script()
    with sdk_http_server(sdk_python, "json") as upstream, \
            mitmdump_reverse(upstream, "-s", str(addon), "--set", f"mcptap_db={db}") as dump:
        out = sdk_client(sdk_python, "legacy", "streamable", f"http://127.0.0.1:{dump['port']}/mcp")
    status, errors = dump["status"], dump["errors"]
    assert status == 0, errors
    assert out["echo"] == "héllo ✓"
    report = assert_no_false_findings(db)
    assert report["sessions"][0]["frames"] >= 8


def _self_signed(folder: Path) -> tuple[str, str]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    import ipaddress

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def test_an_https_upstream_is_recorded_with_insecure_for_a_self_signed_certificate(sdk_python, tmp_path):
    from tests.support.http_helpers import http_server
    from tests.conftest import tool

    cert, key = _self_signed(tmp_path)
    db = tmp_path / "tls.db"
    port = free_port()
    with http_server([sdk_python, tool("sdk_http_server.py"), "https", str(port), cert, key], port):
        upstream = f"https://127.0.0.1:{port}"
        with mcptap_proxy(db, upstream, "--insecure") as proxy:
            out = sdk_client(sdk_python, "legacy", "streamable", proxy.url + "/mcp")
            assert proxy.stop() == 0, proxy.errors
    assert out["echo"] == "héllo ✓"
    report = assert_no_false_findings(db)
    assert report["sessions"][0]["frames"] >= 10


def test_a_client_that_disconnects_mid_stream_leaves_every_event_recorded_and_the_session_closed(sdk_python, tmp_path):
    from tests.conftest import tool

    db = tmp_path / "cut.db"

    def progress_frames() -> int:
        try:
            conn = sqlite3.connect(db)
            try:
                return conn.execute("SELECT count(*) FROM frames WHERE raw LIKE "
                                    "'%notifications/progress%'").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            return 0

    with sdk_http_server(sdk_python, "streamable") as upstream, mcptap_proxy(db, upstream) as proxy:
        client = subprocess.Popen([sdk_python, tool("sdk_http_client.py"), "legacy", "streamable", proxy.url + "/mcp",
                                   "ticks", "endless"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: progress_frames() >= 3, 30, "three progress events in the database")
        finally:
            client.kill()  # mid-stream: the proxy sees the client go away
            client.wait()
        seen = progress_frames()
        assert proxy.stop() == 0, proxy.errors
    conn = sqlite3.connect(db)
    outcomes = [r[0] for r in conn.execute("SELECT outcome FROM exchanges WHERE response_type LIKE 'text/event-stream%'")]
    ended = conn.execute("SELECT count(*) FROM sessions WHERE ended_at IS NULL").fetchone()[0]
    conn.close()
    assert progress_frames() >= seen >= 3
    assert any(o.startswith("error") for o in outcomes), outcomes  # the ticks stream broke off
    assert ended == 0


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_call_the_sdk_client_cancels_is_no_missing_response_live_or_imported(sdk_python, tmp_path, mode):
    """The SDK client gives up a slow call: in 2026-07-28 it closes the request (the stateless
    era's cancellation), before 2026 it sends notifications/cancelled. Neither is a missing
    response, recorded live by the proxy or imported from plain mitmdump's capture of it (a dump
and a HAR export)."""
    live, dump, har = tmp_path / "live.db", tmp_path / "cap.mitm", tmp_path / "cap.har"
    with sdk_http_server(sdk_python, "streamable") as upstream, \
            mitmdump_reverse(upstream, "-w", str(dump), "--set", f"hardump={har}") as plain:
        with mcptap_proxy(live, f"http://127.0.0.1:{plain['port']}") as proxy:
            out = sdk_client(sdk_python, mode, "streamable", proxy.url + "/mcp", "cancel")
            assert proxy.stop() == 0, proxy.errors
    assert out["cancel"] == "cancelled" and out["after_cancel"] == "still here"
    imported = {"flows": tmp_path / "flows.db", "har": tmp_path / "har.db"}
    for name, source in (("flows", dump), ("har", har)):
        result = run(mcptap("import", "--db", str(imported[name]), str(source)))
        assert result.returncode == 0, result.stderr.decode()
    for db in (live, *imported.values()):
        report = assert_no_false_findings(db)
        assert [s["revision"] for s in report["sessions"]] == [out["protocol_version"]]
        conn = sqlite3.connect(db)
        gone = conn.execute("SELECT count(*) FROM exchanges WHERE outcome LIKE 'error:%disconnected%'").fetchone()[0]
        conn.close()
        assert gone >= (1 if mode == "auto" else 0)


def test_the_addon_at_mcptap_addon_path_records_through_mitmdump_in_regular_mode(sdk_python, tmp_path):
    """The host points at mitmdump as its HTTP proxy (regular mode), not at a reverse proxy."""
    db = tmp_path / "regular.db"
    call = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    with sdk_http_server(sdk_python, "json") as upstream, \
            mitmdump("regular", "-s", addon_script(), "--set", f"mcptap_db={db}") as dump:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{dump['port']}"}))
        request = urllib.request.Request(f"{upstream}/mcp", data=json.dumps(call).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream"})
        with opener.open(request, timeout=30) as answer:
            assert b'"protocolVersion"' in answer.read()
    assert dump["status"] == 0, dump["errors"]
    conn = sqlite3.connect(db)
    try:
        frames = conn.execute("SELECT direction FROM frames ORDER BY seq").fetchall()
        (upstream_seen,), = conn.execute("SELECT upstream FROM sessions").fetchall()
    finally:
        conn.close()
    assert frames == [("c2s",), ("s2c",)]
    assert upstream_seen == upstream, (upstream_seen, upstream)
