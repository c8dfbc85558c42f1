"""An OTLP/HTTP receiver for the tests, as the OpenTelemetry protocol specification describes one
(OTLP/HTTP, binary protobuf or JSON): POST on /v1/traces and /v1/metrics with `Content-Type:
application/x-protobuf` (or `application/json`, hex ids), the body gzip-compressed when `Content-Encoding: gzip` says so,
decoded with opentelemetry-proto; 200 with an ExportTraceServiceResponse (or
ExportMetricsServiceResponse) as protobuf. Scripted answers: a queue of (status, headers,
partial success) to give before the plain 200s. Listens on 127.0.0.1, any free port."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.rpc import status_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tests.support import httpserve

SIGNALS = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest,
                    metrics_service_pb2.ExportMetricsServiceResponse),
}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    message: object  # the decoded request
    status: int  # what the receiver answered


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    script: list[tuple[int, dict, int]] = field(default_factory=list)  # (status, headers, rejected) to answer next
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def accepted(self, path: str) -> list:
        return [r.message for r in self.received if r.path == path and r.status == 200]

    def spans(self) -> list:
        return [(rs.resource, span) for m in self.accepted("/v1/traces") for rs in m.resource_spans
                for ss in rs.scope_spans for span in ss.spans]


def _from_json(kind, body: bytes):
    """OTLP JSON (hex trace and span ids, the one departure from protobuf's JSON mapping) as `kind`."""
    import base64
    import json

    from google.protobuf import json_format

    def ids(value):
        if isinstance(value, dict):
            return {k: (base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId")
                        else ids(v)) for k, v in value.items()}
        return [ids(v) for v in value] if isinstance(value, list) else value

    return json_format.ParseDict(ids(json.loads(body)), kind(), ignore_unknown_fields=True)


def _handler(receiver: Receiver):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _answer(self, status: int, body: bytes, headers: dict) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            kinds = SIGNALS.get(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if kinds is None:
                self._answer(404, status_pb2.Status(code=5, message="no such signal").SerializeToString(), {})
                return
            content_type = self.headers.get("Content-Type")
            if content_type not in ("application/x-protobuf", "application/json"):
                self._answer(415, status_pb2.Status(code=3, message="protobuf or JSON only").SerializeToString(), {})
                return
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            try:
                message = kinds[0].FromString(body) if content_type == "application/x-protobuf" else _from_json(kinds[0], body)
            except Exception:  # noqa: BLE001 - a body that does not decode is the client's fault
                self._answer(400, status_pb2.Status(code=3, message="bad protobuf").SerializeToString(), {})
                return
            with receiver.lock:
                status, headers, rejected = receiver.script.pop(0) if receiver.script else (200, {}, 0)
                receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, message, status))
            if status != 200:
                self._answer(status, status_pb2.Status(code=14, message="try later").SerializeToString(), headers)
                return
            answer = kinds[1]()
            if rejected:
                if self.path == "/v1/traces":
                    answer.partial_success.rejected_spans = rejected
                else:
                    answer.partial_success.rejected_data_points = rejected
                answer.partial_success.error_message = "some were dropped"
            self._answer(200, answer.SerializeToString(), headers)

    return Handler


class running:
    """`with running() as receiver:` a Receiver serving on a thread until the block ends."""

    def __enter__(self) -> Receiver:
        self._serving = httpserve.serving(None)
        self.receiver = Receiver(self._serving.__enter__())
        self.receiver.server.RequestHandlerClass = _handler(self.receiver)
        return self.receiver

    def __exit__(self, *exc) -> None:
        self._serving.__exit__(*exc)
