"""OTLP/HTTP as the OpenTelemetry protocol specification says (OTLP/HTTP, binary protobuf
encoding): each request POSTed to `/v1/traces` or `/v1/metrics` under the endpoint as
`application/x-protobuf`, gzip-compressed unless asked not to; a 2xx answer is decoded
(ExportTraceServiceResponse, ExportMetricsServiceResponse, read whole only up to MAX_ANSWER
bytes, decompressed a step at a time) and a partial success said as a warning, never retried;
what is counted as sent is what the collector accepted (its rejected spans or data points taken
off). 429, 502, 503 and 504 and a failed connection are retried with exponential backoff,
honouring `Retry-After`, up to ATTEMPTS times; a redirect is never followed (it would carry the
request's headers, the collector's keys among them, elsewhere, and turn the POST into a bodiless
GET): it is an OtlpError saying where it pointed, as is any other status, named with the
server's google.rpc.Status message, and an answer that is not the OTLP one."""

from __future__ import annotations

import gzip
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from urllib.parse import urljoin

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from mcptap.errors import MCPTapError

RETRYABLE = frozenset({429, 502, 503, 504})
ATTEMPTS = 6
BACKOFF_S = 0.5  # the first wait; doubled each retry, with jitter
MAX_WAIT_S = 30.0  # no single wait is longer, whatever Retry-After asks
TIMEOUT_S = 10.0
MAX_ANSWER = 1 << 20
"""Bytes of a collector's answer read, and decoded from its Content-Encoding (an OTLP answer is a
few bytes; a larger one is refused, never held whole)."""


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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 3xx reaches `post` as an HTTPError."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _read(answer, url: str) -> bytes:
    """An answer's body, decoded from its Content-Encoding a step at a time, refused past
    MAX_ANSWER bytes (read or decoded)."""
    from mcptap.wire.bounded import Decoder

    raw = answer.read(MAX_ANSWER + 1)
    encoding = (answer.headers.get("Content-Encoding") or "").strip().lower()
    if len(raw) > MAX_ANSWER:
        raise OtlpError(f"{url} answered a body of more than {MAX_ANSWER} bytes: not read")
    if encoding in ("", "identity"):
        return raw
    out = bytearray()
    try:
        decoder = Decoder(encoding)
        for piece in _pieces(decoder, raw):
            out += piece
            if len(out) > MAX_ANSWER:
                raise OtlpError(f"{url} answered a body that decodes to more than {MAX_ANSWER} bytes: not read")
    except OtlpError:
        raise
    except Exception as exc:  # noqa: BLE001 - an answer that cannot be decoded is the collector's fault
        raise OtlpError(f"{url} answered a body that cannot be decoded ({encoding}: {exc})") from None
    return bytes(out)


def _pieces(decoder, raw: bytes):
    yield from decoder.decode(raw)
    yield from decoder.flush()


def post(url: str, payload: bytes, headers: dict[str, str], *, compress: bool = True,
         sleep: Callable[[float], None] = time.sleep, attempts: int = ATTEMPTS, timeout: float = TIMEOUT_S,
         json: bool = False) -> tuple[bytes, str]:
    """POST one request (protobuf, or OTLP JSON when `json`); (the body of the 2xx answer, its
    Content-Type). Retries as the spec says, up to `attempts` tries; follows no redirect."""
    body = gzip.compress(payload) if compress else payload
    head = {**headers, "Content-Type": "application/json" if json else "application/x-protobuf",
            "User-Agent": "mcptap-otlp"}
    if compress:
        head["Content-Encoding"] = "gzip"
    why = ""
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=body, headers=head, method="POST")
        try:
            with _OPENER.open(request, timeout=timeout) as answer:  # the user's endpoint
                return _read(answer, url), answer.headers.get("Content-Type") or ""
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                location = exc.headers.get("Location")
                where = f" to {urljoin(url, location)}" if location else ""
                raise OtlpError(f"{url} answered HTTP {exc.code}, a redirect{where}: not followed "
                                "(give the collector's own URL)") from None
            try:
                data = _read(exc, url)
            except OtlpError:
                data = b""
            if exc.code not in RETRYABLE:
                message = _status_message(data)
                raise OtlpError(f"{url} refused the export: HTTP {exc.code}" + (f": {message}" if message else "")) from None
            why = f"HTTP {exc.code}"
            wait = _retry_after(exc.headers.get("Retry-After"), attempt)
        except (urllib.error.URLError, OSError) as exc:
            why = str(getattr(exc, "reason", exc))
            wait = _retry_after(None, attempt)
        if attempt + 1 < attempts:
            sleep(wait)
    raise OtlpError(f"{url}: gave up after {attempts} attempt{'s' if attempts != 1 else ''} ({why})")


def _answer(kind, url: str, body: bytes, content_type: str):
    """The collector's Export*ServiceResponse: protobuf, or JSON where the answer says it is."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    try:
        if content_type.split(";")[0].strip().lower() == "application/json":
            return json_format.Parse(body or b"{}", kind(), ignore_unknown_fields=True)
        return kind.FromString(body)
    except (DecodeError, json_format.ParseError, ValueError, UnicodeDecodeError):
        raise OtlpError(f"{url} answered a body that is not an OTLP {kind.__name__}: nothing counted as sent") from None


def export(request, url: str, headers: dict[str, str], *, compress: bool = True, attempts: int = ATTEMPTS,
           timeout: float = TIMEOUT_S, json: bool = False) -> tuple[int, int, str]:
    """Send one ExportTraceServiceRequest or ExportMetricsServiceRequest to `url`; (spans or data
    points the collector accepted, those it rejected, its partial success's message). OtlpError
    when it was not accepted."""
    traces = isinstance(request, trace_service_pb2.ExportTraceServiceRequest)
    kind = trace_service_pb2.ExportTraceServiceResponse if traces else metrics_service_pb2.ExportMetricsServiceResponse
    if json:
        from mcptap.report.otlp import to_json

        payload = to_json(request)
    else:
        payload = request.SerializeToString()
    answer = _answer(kind, url, *post(url, payload, headers, compress=compress, attempts=attempts, timeout=timeout,
                                      json=json))
    if traces:
        rejected = answer.partial_success.rejected_spans
        sent = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    else:
        rejected = answer.partial_success.rejected_data_points
        sent = sum(len(m.histogram.data_points) for rm in request.resource_metrics
                   for sm in rm.scope_metrics for m in sm.metrics)
    rejected = min(max(rejected, 0), sent)
    return sent - rejected, rejected, answer.partial_success.error_message


def send(requests: Iterable[object], endpoint: str, headers: dict[str, str], *, compress: bool = True,
         warn: Callable[[str], None] = lambda m: None) -> tuple[int, int]:
    """Send each request to its signal's URL; (spans, data points) the collector accepted (those
    sent, less those its partial success rejected). A partial success is said through `warn`."""
    spans = points = 0
    for request in requests:
        traces = isinstance(request, trace_service_pb2.ExportTraceServiceRequest)
        url = signal_url(endpoint, "traces" if traces else "metrics")
        accepted, rejected, message = export(request, url, headers, compress=compress)
        if traces:
            spans += accepted
        else:
            points += accepted
        if rejected or message:
            kind = "spans" if traces else "data points"
            warn(f"{url} accepted the export in part: {rejected} {kind} rejected" + (f" ({message})" if message else ""))
    return spans, points
