"""A session's operations (analyzer/analysis/paired.py) as OpenTelemetry spans that follow the
MCP semantic conventions of OpenTelemetry's GenAI conventions, release v0.1.0
(open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md; docs/otel.md says what mcptap
sets): per request a CLIENT span on the side that sent it and a SERVER span, its child, on the
side that handled it; their times are the recorded frames' times. The parent of the CLIENT span
is the request's `params._meta.traceparent` when it carries a valid one; otherwise the spans
are roots of one trace per session. Progress and cancellation notifications are events of the
CLIENT span of their request, the other notifications spans of their own; mcptap's findings are
events (`mcptap.finding`) of the CLIENT span of their frame's operation. Built as
opentelemetry-proto messages."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import orjson
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from mcptap.analysis import mcp, paired
from mcptap.wire.textsafe import storable

CONVENTIONS = "https://github.com/open-telemetry/semantic-conventions-genai/tree/v0.1.0/docs/gen-ai/mcp.md"
SCOPE = "mcptap"
CLIENT, SERVER = trace_pb2.Span.SPAN_KIND_CLIENT, trace_pb2.Span.SPAN_KIND_SERVER
NO_SESSION_ID = frozenset(mcp.STATELESS_REVISIONS)
"""Revisions without sessions: `mcp.session.id` is never set for them."""
TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def _id(size: int, *parts) -> bytes:
    """A stable id of `size` bytes from `parts` (the same export gives the same ids)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass")).digest()[:size]


def trace_id_of(session_id: str) -> bytes:
    return _id(16, "trace", session_id)


def parent_of(meta: dict) -> tuple[bytes, bytes, str] | None:
    """(trace id, parent span id, tracestate) from a W3C `traceparent` in `_meta`, else None
    (absent, malformed, or the all-zero ids the W3C spec calls invalid)."""
    value = meta.get("traceparent")
    m = TRACEPARENT.match(value) if isinstance(value, str) else None
    if m is None or m.group(1) == "ff" or set(m.group(2)) == {"0"} or set(m.group(3)) == {"0"}:
        return None
    state = meta.get("tracestate")
    return bytes.fromhex(m.group(2)), bytes.fromhex(m.group(3)), state if isinstance(state, str) else ""


def _value(v) -> common_pb2.AnyValue:
    if isinstance(v, bool):
        return common_pb2.AnyValue(bool_value=v)
    if isinstance(v, int):
        return common_pb2.AnyValue(int_value=v)
    if isinstance(v, float):
        return common_pb2.AnyValue(double_value=v)
    return common_pb2.AnyValue(string_value=storable(str(v)))


def attributes(pairs: dict) -> list[common_pb2.KeyValue]:
    """Attributes of the pairs whose value is not None; text as protobuf takes it (storable: a lone
    surrogate written as its escape)."""
    return [common_pb2.KeyValue(key=storable(k), value=_value(v)) for k, v in pairs.items() if v is not None]


def _json(value) -> str:
    """A value of the traffic as compact JSON text (one with a lone surrogate too)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return storable(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _nanos(ts: float) -> int:
    return int(round(ts * 1e9))


class SessionFacts:
    """What every span of a session shares: transport, revision, session id, server address,
    the names of client and server."""

    def __init__(self, session: dict, summary: dict, exchanges: list[dict]):
        self.session_id = session["id"]
        self.transport = session.get("transport")
        self.revision = summary.get("revision")
        self.http = bool(exchanges) or self.transport in ("http", "sse")
        assigned = next((e.get("assigned_session") or e.get("mcp_session_id") for e in exchanges
                         if e.get("assigned_session") or e.get("mcp_session_id")), None)
        self.mcp_session_id = None if self.revision in NO_SESSION_ID else assigned
        url = session.get("upstream") or next((e.get("url") for e in exchanges if e.get("url")), None)
        self.address, self.port = None, None
        if url:
            try:
                parts = urlsplit(url)
                self.address, self.port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                pass
        self.trace_id = trace_id_of(self.session_id)
        self.client_name: str | None = None
        self.server_name: str | None = None
        self.label = session.get("label")

    def common(self) -> dict:
        return {"mcp.protocol.version": self.revision, "mcp.session.id": self.mcp_session_id,
                "network.transport": "tcp" if self.http else "pipe",
                "network.protocol.name": "http" if self.http else None}

    def resource(self, side: str) -> resource_pb2.Resource:
        """The resource of one side: service.name the client's or server's name as initialize
        gave it, else mcp-client / mcp-server (or the session's label for the server)."""
        if side == "client":
            name = self.client_name or "mcp-client"
        else:
            name = self.server_name or self.label or "mcp-server"
        return resource_pb2.Resource(attributes=attributes(
            {"service.name": name, "mcptap.session": self.session_id, "mcptap.side": side}))


def learn_names(facts: SessionFacts, op: paired.Operation) -> None:
    """The client's and server's names from an initialize exchange."""
    if op.method != "initialize":
        return
    info = op.params.get("clientInfo")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        facts.client_name = info["name"]
    result = op.response.get("result") if isinstance(op.response, dict) else None
    info = result.get("serverInfo") if isinstance(result, dict) else None
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        facts.server_name = info["name"]


def error_type(op: paired.Operation) -> str | None:
    if op.outcome == paired.ERROR:
        return str(op.error_code) if op.error_code is not None else "_OTHER"
    if op.outcome == paired.TOOL_ERROR:
        return "tool_error"
    return None


def span_attributes(facts: SessionFacts, op: paired.Operation, kind: int, content: bool) -> dict:
    """The conventions' attributes of one span of `op` (kind CLIENT or SERVER)."""
    tool, prompt = paired.target(op)
    rid = op.id
    attrs = {"mcp.method.name": op.method,
             "jsonrpc.request.id": None if rid is mcp.ABSENT or rid is None or isinstance(rid, (dict, list))
             else (str(rid).lower() if isinstance(rid, bool) else str(rid)),
             "error.type": error_type(op),
             "rpc.response.status_code": str(op.error_code) if op.outcome == paired.ERROR and op.error_code is not None
             else None,
             "gen_ai.tool.name": tool, "gen_ai.prompt.name": prompt,
             "gen_ai.operation.name": "execute_tool" if op.method == "tools/call" else None,
             "mcp.resource.uri": paired.resource_uri(op), **facts.common()}
    version = op.request.get("jsonrpc") if isinstance(op.request, dict) else None
    if version != "2.0":
        attrs["jsonrpc.protocol.version"] = str(version) if version is not None else None
    if kind == CLIENT and facts.address:
        attrs["server.address"], attrs["server.port"] = facts.address, facts.port
    attrs["mcptap.frame"] = op.seq
    attrs["mcptap.outcome"] = op.outcome
    if op.response_seq is not None:
        attrs["mcptap.response_frame"] = op.response_seq
    if content and op.method == "tools/call":
        if "arguments" in op.params:
            attrs["gen_ai.tool.call.arguments"] = _json(op.params["arguments"])
        result = op.response.get("result") if isinstance(op.response, dict) else None
        if op.outcome == paired.OK and result is not None:
            attrs["gen_ai.tool.call.result"] = _json(result)
    elif content and op.method == "prompts/get" and isinstance(op.params.get("arguments"), dict):
        attrs["gen_ai.prompt.variable"] = _json(op.params["arguments"])
    return attrs


def _events(op: paired.Operation) -> list[trace_pb2.Span.Event]:
    events = []
    for note in op.notes:
        params = note.params if isinstance(note.params, dict) else {}
        keep = {k: params.get(k) for k in ("progress", "total", "message", "reason", "requestId")
                if isinstance(params.get(k), (str, int, float)) and not isinstance(params.get(k), bool)}
        events.append(trace_pb2.Span.Event(time_unix_nano=_nanos(note.ts), name=note.method,
                                           attributes=attributes({"mcp.method.name": note.method, **keep,
                                                                  "mcptap.frame": note.seq})))
    for f in op.findings:
        _sid, seq, idx, code, severity, message, related = f
        events.append(trace_pb2.Span.Event(
            time_unix_nano=_nanos(op.response_ts if seq == op.response_seq and op.response_ts else op.ts),
            name="mcptap.finding", attributes=attributes({"mcptap.finding.code": code,
                                                          "mcptap.finding.severity": severity,
                                                          "mcptap.finding.message": message, "mcptap.frame": seq,
                                                          "mcptap.finding.index": idx,
                                                          "mcptap.finding.related_frame": related})))
    return events


def spans(facts: SessionFacts, op: paired.Operation, content: bool = False) -> Iterator[tuple[str, trace_pb2.Span]]:
    """(side, span) of one operation: the CLIENT span on the sender's side, then the SERVER span
    on the other (a request the server sent: CLIENT on the server's side)."""
    sender, handler = ("client", "server") if op.direction == mcp.C2S else ("server", "client")
    tool, prompt = paired.target(op)
    name = storable(f"{op.method} {tool or prompt}" if (tool or prompt) else op.method)
    start = _nanos(op.ts)
    end = _nanos(op.response_ts) if op.response_ts is not None else start
    remote = parent_of(op.meta)
    trace_id, parent, state = remote if remote is not None else (facts.trace_id, b"", "")
    state = storable(state)
    key = (facts.session_id, op.seq, op.idx)
    client_id, server_id = _id(8, "client", *key), _id(8, "server", *key)
    err = error_type(op)
    status = (trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message=storable(op.error_message or ""))
              if err is not None else trace_pb2.Status())
    yield sender, trace_pb2.Span(
        trace_id=trace_id, span_id=client_id, parent_span_id=parent, trace_state=state, name=name, kind=CLIENT,
        start_time_unix_nano=start, end_time_unix_nano=end, attributes=attributes(span_attributes(facts, op, CLIENT, content)),
        events=_events(op), status=status)
    yield handler, trace_pb2.Span(
        trace_id=trace_id, span_id=server_id, parent_span_id=client_id, trace_state=state, name=name, kind=SERVER,
        start_time_unix_nano=start, end_time_unix_nano=end, attributes=attributes(span_attributes(facts, op, SERVER, content)),
        status=status)
