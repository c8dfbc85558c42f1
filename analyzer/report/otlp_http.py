"""OTLP/HTTP as the OpenTelemetry protocol specification says (OTLP/HTTP, binary protobuf
encoding): each request POSTed to `/v1/traces` or `/v1/metrics` under the endpoint as
`application/x-protobuf`, gzip-compressed unless asked not to; a 200 answer is decoded
(ExportTraceServiceResponse, ExportMetricsServiceResponse) and a partial success said as a
warning, never retried; 429, 502, 503 and 504 and a failed connection are retried with
exponential backoff, honouring `Retry-After`, up to ATTEMPTS times; any other status is an
OtlpError naming it and the server's google.rpc.Status message."""

from __future__ import annotations

import gzip
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from mcptap.errors import MCPTapError

RETRYABLE = frozenset({429, 502, 503, 504})
ATTEMPTS = 6
BACKOFF_S = 0.5  # the first wait; doubled each retry, with jitter
MAX_WAIT_S = 30.0  # no single wait is longer, whatever Retry-After asks
TIMEOUT_S = 10.0


class OtlpError(MCPTapError):
    """The collector refused an export, or could not be reached after the retries."""


def signal_url(endpoint: str, signal: str) -> str:
    """The URL of a signal under `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT's rule: the base URL
    and `v1/traces`); an endpoint that already ends in a signal path is used for that signal."""
    base = endpoint.rstrip("/")
    for known in ("/v1/traces", "/v1/metrics"):
        if base.endswith(known):
            base = base[: -len(known)]
    return f"{base}/v1/{signal}"


def _retry_after(value: str | None, attempt: int) -> float:
    if value is not None:
        try:
            return min(max(float(value.strip()), 0.0), MAX_WAIT_S)
        except ValueError:
            pass  # an HTTP-date: back off as if none was given
    return min(BACKOFF_S * (2 ** attempt) * (0.5 + random.random() / 2), MAX_WAIT_S)


def _status_message(body: bytes) -> str:
    try:
        from google.rpc import status_pb2

        status = status_pb2.Status.FromString(body)
        return status.message
    except Exception:  # noqa: BLE001 - a body that is not a Status: no message to give
        return ""


def post(url: str, payload: bytes, headers: dict[str, str], *, compress: bool = True,
         sleep: Callable[[float], None] = time.sleep) -> bytes:
    """POST one protobuf request; the body of the 200 answer. Retries as the spec says."""
    body = gzip.compress(payload) if compress else payload
    head = {**headers, "Content-Type": "application/x-protobuf", "User-Agent": "mcptap-otlp"}
    if compress:
        head["Content-Encoding"] = "gzip"
    why = ""
    for attempt in range(ATTEMPTS):
        request = urllib.request.Request(url, data=body, headers=head, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310 - the user's endpoint
                data = answer.read()
                if answer.headers.get("Content-Encoding", "").lower() == "gzip":
                    data = gzip.decompress(data)
                return data
        except urllib.error.HTTPError as exc:
            data = exc.read()
            if exc.code not in RETRYABLE:
                message = _status_message(data)
                raise OtlpError(f"{url} refused the export: HTTP {exc.code}" + (f": {message}" if message else "")) from None
            why = f"HTTP {exc.code}"
            wait = _retry_after(exc.headers.get("Retry-After"), attempt)
        except (urllib.error.URLError, OSError) as exc:
            why = str(getattr(exc, "reason", exc))
            wait = _retry_after(None, attempt)
        if attempt + 1 < ATTEMPTS:
            sleep(wait)
    raise OtlpError(f"{url}: gave up after {ATTEMPTS} attempts ({why})")


def send(requests: Iterable[object], endpoint: str, headers: dict[str, str], *, compress: bool = True,
         warn: Callable[[str], None] = lambda m: None) -> tuple[int, int]:
    """Send each request to its signal's URL; (spans sent, data points sent). A partial success
    is said through `warn`."""
    spans = points = 0
    for request in requests:
        if isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
            url = signal_url(endpoint, "traces")
            answer = trace_service_pb2.ExportTraceServiceResponse.FromString(
                post(url, request.SerializeToString(), headers, compress=compress))
            rejected = answer.partial_success.rejected_spans
            spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
            kind = "spans"
        else:
            url = signal_url(endpoint, "metrics")
            answer = metrics_service_pb2.ExportMetricsServiceResponse.FromString(
                post(url, request.SerializeToString(), headers, compress=compress))
            rejected = answer.partial_success.rejected_data_points
            points += sum(len(m.histogram.data_points) for rm in request.resource_metrics
                          for sm in rm.scope_metrics for m in sm.metrics)
            kind = "data points"
        message = answer.partial_success.error_message
        if rejected or message:
            warn(f"{url} accepted the export in part: {rejected} {kind} rejected" + (f" ({message})" if message else ""))
    return spans, points
