"""A hostile or misconfigured OTLP collector (`mcptap export --otlp-endpoint`): one that answers a
redirect to another origin never receives the export's headers there (the `Authorization` and
vendor key the user gave), the redirect is one line and a non-zero exit, and nothing is said to be
sent; only what a collector accepted is counted (its partial success's rejected spans taken off);
a compressed answer that inflates to half a gigabyte is refused in one line without being held. Real
collectors: small HTTP servers on 127.0.0.1 in the test and tests/support/otlp_receiver.py."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field

import pytest

from tests.conftest import mcptap
from tests.support import httpserve, otlp_receiver
from tests.support.inprocess import cli
from tests.support.peakrss import run_measured
from tests.support.sessions import handshake, ok, req

BEARER = "otlp-bearer-5c2e81"
VENDOR_KEY = "otlp-vendorkey-a94d17"
HEADERS = ["--header", f"Authorization=Bearer {BEARER}", "--header", f"x-api-key={VENDOR_KEY}"]
BOMB_MB = 512  # what the hostile collector's gzip answer inflates to (half a megabyte compressed)
PEAK_MB = 300  # far below it


@dataclass
class Collector:
    """A real HTTP server on 127.0.0.1 that answers every request with `answer` (status, headers,
    body) and keeps what it received (method, path, headers)."""

    answer: tuple[int, dict, bytes] = (200, {}, b"")
    received: list[tuple[str, str, dict]] = field(default_factory=list)

    def __enter__(self) -> "Collector":
        collector = self

        class Handler(httpserve.QuietHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                collector.received.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = collector.answer
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _any  # noqa: N815 - http.server's names

        self._serving = httpserve.serving(Handler)
        self.server = self._serving.__enter__()
        return self

    @property
    def endpoint(self) -> str:
        return httpserve.url(self.server)

    def __exit__(self, *exc) -> None:
        self._serving.__exit__(*exc)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    """Two sessions with tool calls, imported from a frame log."""
    folder = tmp_path_factory.mktemp("otlp-hostile")
    lines = []
    for session in ("one", "two"):
        frames = handshake() + [("c2s", req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})),
                                ("s2c", ok(1, {"content": [{"type": "text", "text": "hi"}]})),
                                ("c2s", req(2, "tools/list")), ("s2c", ok(2, {"tools": []}))]
        lines += [json.dumps({"session": session, "seq": n, "ts": 1764460800.0 + n, "direction": d, "raw": raw})
                  for n, (d, raw) in enumerate(frames, 1)]
    log = folder / "made.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = str(folder / "rec.db")
    assert cli("import", "--db", path, str(log)).returncode == 0
    return path


def export(db: str, endpoint: str):
    return cli("export", "--db", db, "--otlp-endpoint", endpoint, *HEADERS, timeout=120)


def assert_one_line_error(result) -> None:
    assert result.returncode != 0 and result.stdout == b"", result.stdout
    assert result.stderr.startswith(b"mcptap: error:") and result.stderr.count(b"\n") == 1, result.stderr


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_collector_redirecting_to_another_origin_gets_no_export_there_and_the_redirect_is_one_line(db, status):
    with Collector() as elsewhere:
        with Collector((status, {"Location": f"{elsewhere.endpoint}/v1/traces"}, b"")) as collector:
            result = export(db, collector.endpoint)
        assert elsewhere.received == []  # neither the keys nor a bodiless GET went there
    assert [(method, path) for method, path, _ in collector.received] == [("POST", "/v1/traces")]
    assert_one_line_error(result)
    assert b"redirect" in result.stderr and BEARER.encode() not in result.stderr


def test_a_redirect_to_the_same_origin_is_not_followed_either(db):
    with Collector((302, {"Location": "/elsewhere/v1/traces"}, b"")) as collector:
        result = export(db, collector.endpoint)
    assert [(method, path) for method, path, _ in collector.received] == [("POST", "/v1/traces")]
    assert_one_line_error(result)


def _said(stdout: bytes) -> tuple[int, int]:
    m = re.search(rb"accepted (\d+) spans and (\d+) histogram data points", stdout)
    assert m is not None, stdout
    return int(m.group(1)), int(m.group(2))


def test_only_what_the_collector_accepted_is_counted(db):
    with otlp_receiver.running() as receiver:
        receiver.script[:] = [(200, {}, 3)]  # the first export: three of its spans or points rejected
        result = export(db, receiver.endpoint)
    assert result.returncode == 0, result.stderr
    first = receiver.received[0].path
    spans = len(receiver.spans())
    points = sum(len(m.histogram.data_points) for r in receiver.accepted("/v1/metrics") for rm in r.resource_metrics
                 for sm in rm.scope_metrics for m in sm.metrics)
    assert spans > 3 and points > 3
    expected = (spans - 3, points) if first == "/v1/traces" else (spans, points - 3)
    assert _said(result.stdout) == expected
    assert b"3 " in result.stderr and b"rejected" in result.stderr


def test_an_answer_that_is_not_otlp_counts_nothing_as_sent(db):
    page = b"<html><body>" + b"<p>not a collector</p>" * 50 + b"</body></html>"
    with Collector((200, {"Content-Type": "text/html"}, page)) as collector:
        result = export(db, collector.endpoint)
    assert collector.received
    assert_one_line_error(result)


@pytest.mark.serial
def test_a_compressed_answer_that_inflates_to_half_a_gigabyte_is_refused_without_being_held(db):
    bomb = gzip.compress(b"\0" * (BOMB_MB << 20), compresslevel=9)
    assert len(bomb) < 1 << 20  # under the bytes an answer may have: refused as it inflates
    with Collector((200, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, bomb)) as collector:
        result, peak_kb = run_measured(mcptap("export", "--db", db, "--otlp-endpoint", collector.endpoint, *HEADERS),
                                       capture_output=True, timeout=300)
    assert collector.received
    assert_one_line_error(result)
    assert peak_kb < PEAK_MB << 10, peak_kb
