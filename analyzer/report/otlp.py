"""OpenTelemetry exports of recorded sessions, spans and metrics by the MCP semantic conventions
(analyzer/report/otlp_spans.py, otlp_metrics.py): `--format otlp` writes OTLP JSON as a
collector's file exporter does (one ExportTraceServiceRequest per line, then one
ExportMetricsServiceRequest; lowerCamelCase names, hex trace and span ids, 64-bit integers as
strings, enums as integers); `--otlp-endpoint` sends the same requests as OTLP/HTTP protobuf
(analyzer/report/otlp_http.py). Spans go BATCH_SPANS at a time, so memory stays flat."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

import mcptap
from mcptap import store
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.engine import session_view as views
from mcptap.report import otlp_metrics, otlp_spans
from mcptap.wire.textsafe import json_text

BATCH_SPANS = 2048
"""Spans per ExportTraceServiceRequest (a line of the JSON file, a POST to the endpoint)."""
ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _scope() -> common_pb2.InstrumentationScope:
    return common_pb2.InstrumentationScope(name=otlp_spans.SCOPE, version=mcptap.__version__)


def traces_request(facts: otlp_spans.SessionFacts,
                   batch: list[tuple[str, trace_pb2.Span]]) -> trace_service_pb2.ExportTraceServiceRequest:
    """The spans of a session's (side, span) pairs as one request, a resource per side."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    for side in ("client", "server"):
        spans = [span for s, span in batch if s == side]
        if spans:
            request.resource_spans.append(trace_pb2.ResourceSpans(
                resource=facts.resource(side),
                scope_spans=[trace_pb2.ScopeSpans(scope=_scope(), spans=spans)]))
    return request


def requests(conn: sqlite3.Connection, session_ids: Iterable[str], *, content: bool = False,
             progress: Callable[[int], None] | None = None) -> Iterator[object]:
    """The export as OTLP requests: ExportTraceServiceRequests of each session's spans, then one
    ExportMetricsServiceRequest of the duration histograms. `progress(n)`: n more frames done."""
    durations = otlp_metrics.Durations()
    for sid in session_ids:
        view = views.session_view(conn, sid)
        facts = otlp_spans.SessionFacts(view.session, view.summary, view.exchanges)
        batch: list[tuple[str, trace_pb2.Span]] = []
        first = last = None
        for op in view.operations:
            otlp_spans.learn_names(facts, op)
            durations.operation(facts, op)
            end = op.response_ts if op.response_ts is not None else op.ts
            first = op.ts if first is None else min(first, op.ts)
            last = end if last is None else max(last, end)
            batch.extend(otlp_spans.spans(facts, op, content))
            if len(batch) >= BATCH_SPANS:
                yield traces_request(facts, batch)
                batch = []
        if batch:
            yield traces_request(facts, batch)
        durations.session(facts, first, last)
        if progress is not None:
            progress(store.count_frames(conn, [sid]))
    metrics = durations.metrics()
    if metrics:
        yield metrics_request(metrics)


def metrics_request(metrics: list[metrics_pb2.Metric]) -> metrics_service_pb2.ExportMetricsServiceRequest:
    """Metrics as one request of the resource `service.name` mcptap."""
    return metrics_service_pb2.ExportMetricsServiceRequest(resource_metrics=[metrics_pb2.ResourceMetrics(
        resource=resource_pb2.Resource(attributes=otlp_spans.attributes({"service.name": "mcptap"})),
        scope_metrics=[metrics_pb2.ScopeMetrics(scope=_scope(), metrics=metrics)])])


def _hex_ids(value):
    """OTLP JSON's one departure from protobuf's JSON mapping: trace and span ids in hex."""
    if isinstance(value, dict):
        return {k: (_b64_to_hex(v) if k in ID_FIELDS and isinstance(v, str) else _hex_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def _b64_to_hex(text: str) -> str:
    import base64

    return base64.b64decode(text).hex()


def to_json(request) -> bytes:
    """One OTLP request as OTLP JSON (a line of a collector's file exporter), every character a
    terminal would act on or hide written as its JSON escape (textsafe.json_text)."""
    as_dict = json_format.MessageToDict(request, use_integers_for_enums=True)
    return json_text(orjson.dumps(_hex_ids(as_dict)).decode("utf-8")).encode("utf-8")


def write_json(conn: sqlite3.Connection, out: IO[bytes], options: WriteOptions = NO_OPTIONS) -> int:
    """`--format otlp`: each request a line of OTLP JSON (`options`: sessions, content,
    progress); the number of lines."""
    n = 0
    for request in requests(conn, options.sessions, content=options.content, progress=options.progress):
        out.write(to_json(request) + b"\n")
        n += 1
    return n
