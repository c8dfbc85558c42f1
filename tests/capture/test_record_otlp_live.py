"""Live telemetry of `mcptap record --otlp-endpoint`: a real server (mcp-server-time) recorded
through the tee while a spec-following OTLP/HTTP receiver (tests/support/otlp_receiver.py) gets its
spans by the MCP semantic conventions before the recording ends; a flood with the endpoint down
loses no frame, and the drops are stored in the session's row and shown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.conftest import frames, mcptap, rows, run, wait_for
from tests.support import otlp_receiver

pytest.importorskip("opentelemetry.proto")

CLIENT, SERVER = 3, 2  # Span.SPAN_KIND_CLIENT, SPAN_KIND_SERVER


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, **extra}


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = v.string_value if v.HasField("string_value") else v.int_value
    return out


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    """A host speaking JSON-RPC lines to `mcptap record` over pipes, reading each answer."""

    def __init__(self, argv: list[str], env: dict):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, message: dict) -> dict:
        self.send(message)
        while True:
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read().decode(errors="replace")
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    def end(self) -> tuple[int, bytes]:
        self.proc.stdin.close()
        status = self.proc.wait(60)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return status, err


def test_a_recorded_server_s_spans_arrive_at_the_receiver_while_the_recording_goes_on(db, time_server):
    with otlp_receiver.running() as receiver:
        host = Host(mcptap("record", "--db", str(db), "--otlp-endpoint", receiver.endpoint, "--", *time_server),
                    _env())
        try:
            init = host.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "live-host", "version": "1"}}})
            host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = host.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "get_current_time", "arguments": {"timezone": "UTC"}}})
            bad = host.ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": "no_such_tool", "arguments": {}}})
            assert "result" in init and "result" in call
            # live: the spans come while the server still runs and the host still holds the session
            wait_for(lambda: {"tools/call get_current_time", "tools/call no_such_tool"}
                     <= {s.name for _, s in receiver.spans()}, 120, "the live spans")
            assert host.proc.poll() is None
        finally:
            status, err = host.end()
        assert status == 0, err
        spans = receiver.spans()
    by_name: dict[str, list] = {}
    for resource, span in spans:
        by_name.setdefault(span.name, []).append((resource, span))
    call_spans = by_name["tools/call get_current_time"]
    assert sorted(s.kind for _, s in call_spans) == [SERVER, CLIENT]
    client = next(s for _, s in call_spans if s.kind == CLIENT)
    server = next(s for _, s in call_spans if s.kind == SERVER)
    assert server.parent_span_id == client.span_id and server.trace_id == client.trace_id
    attrs = _attrs(client)
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "get_current_time"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["jsonrpc.request.id"] == "2"
    assert attrs["network.transport"] == "pipe"
    assert attrs["mcp.protocol.version"] == "2025-06-18"
    assert "mcp.session.id" not in attrs
    assert client.end_time_unix_nano >= client.start_time_unix_nano > 0
    client_resource = next(r for r, s in call_spans if s.kind == CLIENT)
    assert {kv.key: kv.value.string_value for kv in client_resource.attributes}["service.name"] == "live-host"
    failed = _attrs(next(s for _, s in by_name["tools/call no_such_tool"] if s.kind == CLIENT))
    assert failed.get("error.type") in ("tool_error", str(bad.get("error", {}).get("code")))
    assert [s.kind for _, s in by_name["initialize"]].count(CLIENT) == 1
    assert "notifications/initialized" in by_name
    # the duration histograms, by the conventions' names
    names = {m.name for req in receiver.accepted("/v1/metrics") for rm in req.resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics}
    assert {"mcp.client.operation.duration", "mcp.server.operation.duration"} <= names
    [(telemetry,)] = rows(db, "SELECT telemetry FROM sessions")
    counts = json.loads(telemetry)
    assert counts["spans_sent"] == len(spans) and counts["spans_dropped"] == 0 and counts["frames_dropped"] == 0


ANSWERING = ("import json, sys\n"
             "for line in sys.stdin:\n"
             "    sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': {}}) + '\\n')\n"
             "    sys.stdout.flush()\n")
"""A server answering each request line with an empty result."""


def test_a_flood_with_the_endpoint_down_records_every_frame_and_stores_the_drops(db, tmp_path):
    n = 3000
    port = _closed_port()
    result = run(mcptap("record", "--db", str(db), "--otlp-endpoint", f"http://127.0.0.1:{port}", "--",
                        sys.executable, "-c", ANSWERING),
                 input=b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}\n' % i
                                for i in range(n)), env=_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert len(frames(db, "c2s")) == n and len(frames(db, "s2c")) == n
    [(telemetry,)] = rows(db, "SELECT telemetry FROM sessions")
    counts = json.loads(telemetry)
    assert counts["spans_sent"] == 0
    assert counts["spans_dropped"] + 2 * counts["frames_dropped"] >= 2 * n  # every request's two spans, or its frames
    assert b"live telemetry" in result.stderr  # said once, on stderr
    listing = run(mcptap("sessions", "--db", str(db), "--format", "json"))
    [session] = json.loads(listing.stdout)["sessions"]
    assert session["telemetry"] == counts
    listed = run(mcptap("sessions", "--db", str(db)))
    assert b"live telemetry" in listed.stdout and b"dropped" in listed.stdout
    shown = run(mcptap("show", "--db", str(db), "@1"))
    assert b"telemetry" in shown.stdout and b"dropped" in shown.stdout


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="utf-8") as f:
            out += [int(c) for c in f.read().split()]
    return out


def _dead(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _recorder_of(tee_pid: int) -> int | None:
    """The tee's recorder process (the live telemetry's: mcptap.report.otlp_live), once it runs."""
    for child in _children(tee_pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"mcptap.report.otlp_live" in f.read():
                    return child
        except FileNotFoundError:
            continue
    return None


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="finds the recorder process in /proc")
def test_a_recorder_killed_during_a_flood_with_the_endpoint_down_keeps_the_drops_counted_so_far(db):
    import signal
    import threading

    n = 3000
    port = _closed_port()
    host = Host(mcptap("record", "--db", str(db), "--otlp-endpoint", f"http://127.0.0.1:{port}", "--",
                       sys.executable, "-c", ANSWERING), _env())
    flood = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}\n' % i for i in range(n))
    writer = threading.Thread(target=lambda: (host.proc.stdin.write(flood), host.proc.stdin.flush()), daemon=True)
    writer.start()
    try:
        for _ in range(n):  # every answer came back: the flood crossed; the host still holds the session
            assert host.proc.stdout.readline()
        writer.join(60)

        def dropped() -> dict | None:
            found = rows(db, "SELECT telemetry FROM sessions", missing_ok=True)
            counts = json.loads(found[0][0]) if found and found[0][0] else None
            return counts if counts and counts["spans_dropped"] + counts["frames_dropped"] > 0 else None

        wait_for(dropped, 60, "drops stored while the recording goes on")
        recorder = wait_for(lambda: _recorder_of(host.proc.pid), 30, "the recorder process")
        os.kill(recorder, signal.SIGKILL)
        wait_for(lambda: _dead(recorder), 30, "the recorder dead")
        assert host.proc.poll() is None  # the tee goes on
    finally:
        status, err = host.end()
    counts = dropped()
    assert counts is not None, err
    assert counts["spans_sent"] == 0


@pytest.mark.parametrize("env, code", [
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://127.0.0.1:1"}, 2),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, 2),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, 2),
])
def test_a_telemetry_setting_that_cannot_be_used_is_one_line_and_exit_2(db, env, code):
    result = run(mcptap("record", "--db", str(db), "--", sys.executable, "-c", ANSWERING), env=_env(**env))
    assert result.returncode == code
    assert result.stderr.count(b"\n") == 1 and result.stderr.startswith(b"mcptap: error: ")


def _post(url: str, message: dict, session: str | None) -> tuple[dict | None, str | None]:
    import urllib.request

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18", **({"Mcp-Session-Id": session} if session else {})}
    request = urllib.request.Request(url, data=json.dumps(message).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
        return (json.loads(body) if body.strip() else None), answer.headers.get("Mcp-Session-Id") or session


def test_a_server_recorded_through_the_proxy_sends_its_spans_live_too(db, sdk_python):
    from tests.support.http_helpers import mcptap_proxy, sdk_http_server

    with otlp_receiver.running() as receiver, sdk_http_server(sdk_python, "json") as upstream, \
            mcptap_proxy(db, upstream + "/mcp", "--otlp-endpoint", receiver.endpoint) as proxy:
        url = proxy.url + "/mcp"
        init, session = _post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "live-http", "version": "1"}}},
            None)
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call, _ = _post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"text": "hi"}}}, session)
        assert "result" in init and "result" in call
        wait_for(lambda: "tools/call echo" in {s.name for _, s in receiver.spans()}, 120, "the live spans")
        assert proxy.proc.poll() is None  # live: the proxy still runs
        assert proxy.stop() == 0, proxy.errors
        spans = receiver.spans()
    client = next(s for _, s in spans if s.name == "tools/call echo" and s.kind == CLIENT)
    attrs = _attrs(client)
    assert attrs["network.transport"] == "tcp" and attrs["network.protocol.name"] == "http"
    assert attrs["server.address"] == "127.0.0.1" and attrs["gen_ai.tool.name"] == "echo"
    [(telemetry,)] = rows(db, "SELECT telemetry FROM sessions")
    assert json.loads(telemetry)["spans_sent"] == len(spans)
