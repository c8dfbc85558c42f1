"""OpenTelemetry exports of real recordings (the `mcp` SDK's client and server, over stdio through
the tee and over Streamable HTTP through the proxy, in both eras) and of a made session with
errors, a tool error, progress, a cancellation and a W3C traceparent: every span is compared
with what OpenTelemetry's MCP semantic conventions (v0.1.0) ask, from the recorded frames; the
spans reach an OTLP/HTTP receiver (tests/support/otlp_receiver.py) through retries and partial
successes; the receiver is checked against the OpenTelemetry SDK's own OTLPSpanExporter."""

from __future__ import annotations

import base64
import json
import sqlite3
import sys

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tests.conftest import mcptap, run, tee, tool
from tests.support import otlp_receiver
from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server
from tests.support.inprocess import cli
from tests.support.sessions import err, note, ok, req

CLIENT, SERVER = 3, 2
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]


def made_session() -> list[tuple[str, str]]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "made-client", "version": "1"}}
    return [
        ("c2s", req(0, "initialize", init)),
        ("s2c", ok(0, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                       "serverInfo": {"name": "made-server", "version": "1"}})),
        ("c2s", note("notifications/initialized")),
        ("c2s", req(1, "tools/call", {"name": "weather", "arguments": {"city": "Oslo"},
                                      "_meta": {"traceparent": TRACEPARENT, "progressToken": "p1"}})),
        ("s2c", note("notifications/progress", {"progressToken": "p1", "progress": 1, "total": 2})),
        ("s2c", note("notifications/progress", {"progressToken": "p1", "progress": 0.5, "total": 2})),
        ("s2c", ok(1, {"content": [{"type": "text", "text": "no such city"}], "isError": True})),
        ("c2s", req("r-2", "prompts/get", {"name": "review", "arguments": {"code": "x"}})),
        ("s2c", err("r-2", -32602, "no prompt review")),
        ("c2s", req(3, "resources/read", {"uri": "file:///tmp/a.txt"})),
        ("s2c", ok(3, {"contents": []})),
        ("c2s", req(5, "completion/complete", {"ref": {"type": "ref/prompt", "name": "review"},
                                               "argument": {"name": "code", "value": "x"}})),
        ("s2c", ok(5, {"completion": {"values": []}})),
        ("c2s", req(4, "tools/call", {"name": "slow", "arguments": {}})),
        ("c2s", note("notifications/cancelled", {"requestId": 4, "reason": "user"})),
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, sdk_python) -> str:
    """One database: the SDK client and server over stdio (both eras), over Streamable HTTP
    through the proxy (both eras), and the made session imported from a frame log."""
    folder = tmp_path_factory.mktemp("otlp")
    db = str(folder / "rec.db")
    for mode in ("legacy", "auto"):
        result = run([sdk_python, tool("sdk_client.py"), mode, "sdk", "--",
                      *tee(db, sdk_python, tool("sdk_server.py"), name=f"stdio-{mode}")], timeout=120)
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        with sdk_http_server(sdk_python, "streamable") as upstream, \
                mcptap_proxy(db, upstream, "--name", f"http-{mode}") as proxy:
            sdk_client(sdk_python, mode, "streamable", f"{proxy.url}/mcp")
            assert proxy.stop() == 0, proxy.errors
    log = folder / "made.jsonl"
    log.write_text("".join(json.dumps({"session": "made", "seq": n, "ts": 1764460800.0 + n * 0.25, "direction": d,
                                       "raw": raw}) + "\n" for n, (d, raw) in enumerate(made_session(), 1)),
                   encoding="utf-8")
    assert cli("import", "--db", db, str(log)).returncode == 0
    return db


def _attrs(kvs) -> dict:
    out = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which)
    return out


def _db_facts(db: str):
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT session_id, seq, ts, CAST(raw AS TEXT), direction FROM frames").fetchall()
    frames = {(sid, seq): (ts, json.loads(raw)) for sid, seq, ts, raw, _ in rows}
    directions = {(sid, seq): d for sid, seq, _, _, d in rows}
    sessions = {sid: (transport, upstream) for sid, transport, upstream in
                conn.execute("SELECT id, transport, upstream FROM sessions")}
    assigned = dict(conn.execute("SELECT session_id, assigned_session FROM exchanges WHERE assigned_session IS NOT NULL"))
    conn.close()
    return frames, directions, sessions, assigned


def _answer_of(frames: dict, sid: str, seq: int, msg: dict):
    """The frame that answers request `msg` (same id, the other direction, after it)."""
    for (s, n), (ts, m) in sorted(frames.items()):
        if s == sid and n > seq and isinstance(m, dict) and "method" not in m and m.get("id") == msg["id"]:
            return ts, m
    return None


def check_conventions(db: str, spans: list) -> None:
    """Every span against the conventions, from the recorded frames."""
    frames, directions, sessions, assigned = _db_facts(db)
    summaries = {s["id"]: s for s in json.loads(cli("analyze", "--db", db, "--format", "json",
                                                          "--fail-on", "never").stdout)["sessions"]}
    by_key = {}
    for resource, span in spans:
        r, a = _attrs(resource.attributes), _attrs(span.attributes)
        sid, seq = r["mcptap.session"], a["mcptap.frame"]
        by_key[(sid, seq, span.kind)] = span
        ts, msg = frames[(sid, seq)]
        method = msg["method"]
        params = msg.get("params") or {}
        assert a["mcp.method.name"] == method
        target = params.get("name") if method in ("tools/call", "prompts/get") else None
        assert span.name == (f"{method} {target}" if target else method)
        assert span.kind in (CLIENT, SERVER)
        assert span.start_time_unix_nano == round(ts * 1e9)
        if "id" in msg and msg["id"] is not None:
            assert a["jsonrpc.request.id"] == str(msg["id"])
        else:
            assert "jsonrpc.request.id" not in a
        answer = _answer_of(frames, sid, seq, msg) if "id" in msg else None
        assert span.end_time_unix_nano == round((answer[0] if answer else ts) * 1e9)
        error = answer[1].get("error") if answer else None
        tool_error = bool(answer) and method == "tools/call" and (answer[1].get("result") or {}).get("isError") is True
        if error:
            assert (a["error.type"], a["rpc.response.status_code"]) == (str(error["code"]), str(error["code"]))
            assert (span.status.code, span.status.message) == (2, error["message"])
        elif tool_error:
            assert a["error.type"] == "tool_error" and span.status.code == 2 and "rpc.response.status_code" not in a
        else:
            assert "error.type" not in a and span.status.code == 0
        assert a.get("gen_ai.tool.name") == (target if method == "tools/call" else None)
        assert a.get("gen_ai.prompt.name") == (target if method == "prompts/get" else None)
        assert a.get("gen_ai.operation.name") == ("execute_tool" if method == "tools/call" else None)
        assert a.get("mcp.resource.uri") == (params.get("uri") if method == "resources/read" else None)
        transport, upstream = sessions[sid]
        assert a["network.transport"] == ("tcp" if transport == "http" else "pipe")
        revision = summaries[sid]["revision"]
        assert a.get("mcp.protocol.version") == revision
        if revision == "2026-07-28" or sid not in assigned:
            assert "mcp.session.id" not in a
        else:
            assert a["mcp.session.id"] == assigned[sid]
        if transport == "http" and span.kind == CLIENT:
            host, port = upstream.split("//")[1].split("/")[0].split(":")
            assert (a["server.address"], a["server.port"]) == (host, int(port))
        else:
            assert "server.address" not in a
        sender = "client" if directions[(sid, seq)] == "c2s" else "server"
        assert r["mcptap.side"] == (sender if span.kind == CLIENT else {"client": "server", "server": "client"}[sender])
    session_traces: dict[str, set] = {}
    for (sid, seq, kind), span in by_key.items():
        client = by_key[(sid, seq, CLIENT)]
        if kind == SERVER:
            assert (span.trace_id, span.parent_span_id) == (client.trace_id, client.span_id)
            continue
        meta = (frames[(sid, seq)][1].get("params") or {}).get("_meta") or {}
        if "traceparent" in meta:
            _, trace, parent, _ = meta["traceparent"].split("-")
            assert (span.trace_id.hex(), span.parent_span_id.hex()) == (trace, parent)
        else:
            assert span.parent_span_id == b""
            session_traces.setdefault(sid, set()).add(span.trace_id)
    assert all(len(traces) == 1 for traces in session_traces.values())  # one trace per session
    assert len({t for traces in session_traces.values() for t in traces}) == len(session_traces)


def export_to(receiver, db: str, *extra: str):
    return cli("export", "--db", db, "--otlp-endpoint", receiver.endpoint, "--header", "x-team=mcp", *extra)


def test_spans_sent_over_otlp_http_follow_the_mcp_conventions_for_every_real_and_made_session(recorded):
    with otlp_receiver.running() as receiver:
        result = export_to(receiver, recorded)
    assert result.returncode == 0, result.stderr.decode()
    assert all(r.headers.get("content-encoding") == "gzip" and r.headers.get("x-team") == "mcp"
               for r in receiver.received)
    spans = receiver.spans()
    sides = {(_attrs(r.attributes)["mcptap.session"]) for r, _ in spans}
    assert len(sides) == 5
    check_conventions(recorded, spans)
    names = {s.name for _, s in spans}
    assert {"initialize", "tools/call echo", "tools/call weather", "prompts/get review", "resources/read",
            "notifications/initialized"} <= names


def test_progress_cancellation_and_findings_are_events_of_their_request(recorded):
    with otlp_receiver.running() as receiver:
        assert export_to(receiver, recorded, "--session", "made").returncode == 0
    client = {s.name: s for r, s in receiver.spans() if s.kind == CLIENT}
    weather = [e.name for e in client["tools/call weather"].events]
    assert weather[:2] == ["notifications/progress", "notifications/progress"]
    slow = client["tools/call slow"]
    assert [e.name for e in slow.events if e.name.startswith("notifications/")] == ["notifications/cancelled"]
    assert _attrs(slow.attributes)["mcptap.outcome"] == "cancelled"
    codes = {_attrs(e.attributes)["mcptap.finding.code"] for s in client.values() for e in s.events
             if e.name == "mcptap.finding"}
    report = json.loads(cli("analyze", "--db", recorded, "--session", "made", "--format", "json",
                                   "--fail-on", "never").stdout)
    on_requests = {f["code"] for f in report["findings"]}
    assert codes and codes <= on_requests


def test_duration_histograms_have_the_conventions_names_and_buckets(recorded):
    with otlp_receiver.running() as receiver:
        assert export_to(receiver, recorded).returncode == 0
    (metrics,) = receiver.accepted("/v1/metrics")
    found = {m.name: m for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert set(found) == {"mcp.client.operation.duration", "mcp.server.operation.duration",
                          "mcp.client.session.duration", "mcp.server.session.duration"}
    for m in found.values():
        assert m.unit == "s"
        for p in m.histogram.data_points:
            assert list(p.explicit_bounds) == BUCKETS and sum(p.bucket_counts) == p.count > 0
    calls = [p for p in found["mcp.client.operation.duration"].histogram.data_points
             if _attrs(p.attributes)["mcp.method.name"] == "tools/call"]
    assert {_attrs(p.attributes).get("error.type") for p in calls} >= {None, "tool_error"}


def test_a_503_is_retried_and_a_partial_success_is_a_warning_not_a_retry(recorded):
    with otlp_receiver.running() as receiver:
        receiver.script[:] = [(503, {"Retry-After": "0"}, 0), (200, {}, 3)]
        result = export_to(receiver, recorded, "--session", "made")
    assert result.returncode == 0, result.stderr.decode()
    statuses = [(r.path, r.status) for r in receiver.received]
    assert statuses[:2] == [("/v1/traces", 503), ("/v1/traces", 200)]
    assert len([s for s in statuses if s[0] == "/v1/traces"]) == 2  # the partial success was not sent again
    assert b"3 spans rejected" in result.stderr and result.stderr.count(b"\n") == 1


def test_a_refused_export_is_one_line_and_exit_2(recorded):
    with otlp_receiver.running() as receiver:
        receiver.script[:] = [(400, {}, 0)]
        result = export_to(receiver, recorded, "--session", "made")
    assert result.returncode == 2
    assert result.stderr.startswith(b"mcptap: error:") and b"HTTP 400" in result.stderr
    assert result.stderr.count(b"\n") == 1


def _from_otlp_json(line: bytes):
    """A line of OTLP JSON back into its protobuf message (ids hex in OTLP JSON, base64 in protobuf's)."""
    def ids(v):
        if isinstance(v, dict):
            return {k: (base64.b64encode(bytes.fromhex(x)).decode() if k in ("traceId", "spanId", "parentSpanId")
                        else ids(x)) for k, x in v.items()}
        return [ids(x) for x in v] if isinstance(v, list) else v
    value = ids(json.loads(line))
    kind = (trace_service_pb2.ExportTraceServiceRequest if "resourceSpans" in value
            else metrics_service_pb2.ExportMetricsServiceRequest)
    return json_format.ParseDict(value, kind())


def test_the_otlp_json_file_holds_the_same_spans_as_the_endpoint_received(recorded, tmp_path):
    out = tmp_path / "spans.otlp.jsonl.gz"
    assert cli("export", "--db", recorded, "--format", "otlp", "-o", str(out)).returncode == 0
    import gzip
    lines = gzip.decompress(out.read_bytes()).splitlines()
    messages = [_from_otlp_json(line) for line in lines]
    for line in lines:  # the OTLP JSON encoding: enums as integers, ids as hex
        assert b'"kind":3' in line or b"resourceMetrics" in line
    with otlp_receiver.running() as receiver:
        assert export_to(receiver, recorded).returncode == 0
    assert messages == [r.message for r in receiver.received]


def test_the_receiver_accepts_the_sdks_own_exporter_identically(recorded):
    """The receiver against the reference client: the same spans sent by the SDK's OTLPSpanExporter
    arrive as the same protobuf spans."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    with otlp_receiver.running() as receiver:
        assert export_to(receiver, recorded, "--session", "made").returncode == 0
        ours = receiver.spans()
        readable = []
        for resource, s in ours:
            ctx = SpanContext(int.from_bytes(s.trace_id, "big"), int.from_bytes(s.span_id, "big"), False,
                              TraceFlags(1))
            parent = (SpanContext(int.from_bytes(s.trace_id, "big"), int.from_bytes(s.parent_span_id, "big"), True,
                                  TraceFlags(1)) if s.parent_span_id else None)
            readable.append(ReadableSpan(
                name=s.name, context=ctx, parent=parent, resource=Resource(_attrs(resource.attributes)),
                attributes=_attrs(s.attributes), kind=SpanKind.CLIENT if s.kind == CLIENT else SpanKind.SERVER,
                status=Status(StatusCode.ERROR, s.status.message or None) if s.status.code == 2 else Status(StatusCode.UNSET),
                start_time=s.start_time_unix_nano, end_time=s.end_time_unix_nano,
                instrumentation_scope=InstrumentationScope("mcptap", "0.1.0")))
        before = len(receiver.received)
        exporter = OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces", compression=Compression.Gzip)
        assert exporter.export(readable) is SpanExportResult.SUCCESS
        theirs = [(r.resource, s) for m in [x.message for x in receiver.received[before:]] for r in
                  m.resource_spans for ss in r.scope_spans for s in ss.spans]
    key = lambda pair: pair[1].span_id  # noqa: E731
    for (r1, a), (r2, b) in zip(sorted(ours, key=key), sorted(theirs, key=key), strict=True):
        assert (a.trace_id, a.span_id, a.parent_span_id, a.name, a.kind, a.start_time_unix_nano,
                a.end_time_unix_nano, a.status.code) == (b.trace_id, b.span_id, b.parent_span_id, b.name, b.kind,
                                                         b.start_time_unix_nano, b.end_time_unix_nano, b.status.code)
        assert _attrs(a.attributes) == _attrs(b.attributes) and _attrs(r1.attributes) == _attrs(r2.attributes)


def test_otlp_without_its_extra_says_which_to_install(tmp_path):
    db = tmp_path / "x.db"
    assert cli("import", "--db", str(db), "tests/golden/corpus/demo.jsonl").returncode == 0
    code = ("import sys, runpy; sys.modules['opentelemetry.proto'] = None; sys.argv = ['mcptap', 'export', '--db', "
            f"{str(db)!r}, '--format', 'otlp']; runpy.run_module('mcptap', run_name='__main__')")
    result = run([sys.executable, "-c", code])
    assert result.returncode == 2 and b"mcptap[otel]" in result.stderr and result.stderr.count(b"\n") == 1
