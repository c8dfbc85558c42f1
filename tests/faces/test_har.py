"""`mcptap export --format har` of real HTTP recordings (the `mcp` SDK's client and server through
`mcptap proxy`: Streamable HTTP with SSE and with JSON answers, both eras, and the legacy
HTTP+SSE transport): valid against the HAR 1.2 schema (tests/data), one entry per exchange with
the headers as stored, and `mcptap import` of it gives back the same frames byte for byte, at
the same times, with the same analysis."""

from __future__ import annotations

import base64
import gzip
import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import mcptap, run, tee, tool
from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server
from tests.support.inprocess import cli

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "har-1.2.schema.json").read_text(encoding="utf-8"))
CASES = [("streamable", "streamable", "/mcp", "legacy"), ("streamable", "streamable", "/mcp", "auto"),
         ("json", "streamable", "/mcp", "legacy"), ("sse", "sse", "/sse", "legacy")]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, sdk_python) -> str:
    db = str(tmp_path_factory.mktemp("har") / "rec.db")
    for server_mode, transport, path, client_mode in CASES:
        with sdk_http_server(sdk_python, server_mode) as upstream, \
                mcptap_proxy(db, upstream, "--name", f"{server_mode}-{client_mode}") as proxy:
            sdk_client(sdk_python, client_mode, transport, f"{proxy.url}{path}",
                       *(("ask",) if server_mode != "json" and client_mode == "legacy" else ()))
            assert proxy.stop() == 0, proxy.errors
    return db


def _sessions(db: str) -> list[list[tuple]]:
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE transport != 'stdio' ORDER BY started_at")]
        return [conn.execute("SELECT direction, CAST(raw AS BLOB), ts, event_id IS NOT NULL, incomplete FROM frames "
                             "WHERE session_id = ? ORDER BY seq", (sid,)).fetchall() for sid in ids]
    finally:
        conn.close()


def _analysis(db: str) -> list:
    report = json.loads(cli("analyze", "--db", db, "--format", "json", "--fail-on", "never").stdout)
    order = {s["id"]: n for n, s in enumerate(sorted(report["sessions"], key=lambda s: s["id"]))}
    summaries = sorted((s["revision"], s["revision_source"], s["frames"], s["kinds"], s["errors"], s["warnings"],
                        s["infos"]) for s in report["sessions"])
    return [summaries, sorted((f["code"], f["frame"], f["severity"]) for f in report["findings"]), len(order)]


def test_the_har_export_is_valid_har_1_2_with_an_entry_per_exchange_and_headers_as_stored(recorded, tmp_path):
    out = tmp_path / "rec.har"
    result = cli("export", "--db", recorded, "--format", "har", "-o", str(out))
    assert result.returncode == 0, result.stderr.decode()
    har = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(har, SCHEMA)
    conn = sqlite3.connect(recorded)
    stored = conn.execute("SELECT id, request_headers, response_headers FROM exchanges WHERE session_id IS NOT NULL").fetchall()
    conn.close()
    entries = {e["_mcptap"]["exchange"]: e for e in har["log"]["entries"]}
    assert set(entries) == {row[0] for row in stored}
    for exchange_id, request_headers, response_headers in stored:
        e = entries[exchange_id]
        assert [[h["name"], h["value"]] for h in e["request"]["headers"]] == json.loads(request_headers)
        assert [[h["name"], h["value"]] for h in e["response"]["headers"]] == json.loads(response_headers)
    streams = [e for e in entries.values() if e["response"]["content"]["mimeType"].startswith("text/event-stream")]
    assert any(e["response"]["content"]["text"].startswith("event: endpoint\n") for e in streams)  # legacy SSE


def test_import_of_the_har_gives_back_the_same_frames_times_and_analysis(recorded, tmp_path):
    out = tmp_path / "rec.har.gz"
    assert cli("export", "--db", recorded, "--format", "har", "-o", str(out)).returncode == 0
    har = tmp_path / "rec.har"
    har.write_bytes(gzip.decompress(out.read_bytes()))
    back = str(tmp_path / "back.db")
    result = cli("import", "--db", back, str(har))
    assert result.returncode == 0, result.stderr.decode()
    before, after = _sessions(recorded), _sessions(back)
    assert len(before) == len(after) == len(CASES)
    for original, imported in zip(before, after):
        assert [(d, raw, e, i) for d, raw, _, e, i in imported] == [(d, raw, e, i) for d, raw, _, e, i in original]
        assert all(abs(a[2] - b[2]) <= 2e-6 for a, b in zip(original, imported))  # HAR's microseconds
    assert _analysis(back) == _analysis(recorded)


T0 = 1_796_000_000.0
ENDPOINT = b"event: endpoint\ndata: /messages/?session_id=abc123\n\n"
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},' \
       b'"clientInfo":{"name":"t","version":"1"}}}'
RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},' \
         b'"serverInfo":{"name":"s","version":"1"}}}'
LATE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}'


def _entry(method: str, path: str, at: float, timings: dict, status: int, mime: str, body: bytes,
           posted: bytes | None = None, events: list | None = None) -> dict:
    headers = [{"name": "accept", "value": "text/event-stream"}] if method == "GET" else \
        [{"name": "content-type", "value": "application/json"}]
    content = {"size": len(body), "mimeType": mime, "text": body.decode()}
    if events is not None:
        content["_events"] = events
    return {"startedDateTime": datetime.fromtimestamp(at, timezone.utc).isoformat().replace("+00:00", "Z"),
            "time": sum(timings.values()),
            "request": {"method": method, "url": f"http://127.0.0.1:9/{path}", "httpVersion": "HTTP/1.1",
                        "headers": headers, "queryString": [], "cookies": [], "headersSize": -1,
                        "bodySize": len(posted or b""),
                        **({"postData": {"mimeType": "application/json", "text": posted.decode()}} if posted else {})},
            "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "content-type", "value": mime}], "cookies": [], "content": content,
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": timings["send"], "wait": timings["wait"], "receive": timings["receive"]}}


def test_a_legacy_stream_whose_har_events_are_dated_a_hair_outside_its_answer_is_one_session_at_its_own_times(tmp_path):
    """A HAR dates a stream's headers from rounded millisecond timings: its first event (the
    endpoint) may be dated microseconds before them, its last after the entry's end. The import
    still reads the endpoint first (one legacy session, not a sessionless GET and a legacy POST)
    and stamps each event with its own time."""
    stream = ENDPOINT + b"event: message\ndata: " + RESULT + b"\n\nevent: message\ndata: " + LATE + b"\n\n"
    first, second = len(ENDPOINT), len(ENDPOINT) + len(b"event: message\ndata: " + RESULT + b"\n\n")
    result_at, late_at = T0 + 0.030, T0 + 0.100 + 3e-6
    get = _entry("GET", "sse", T0, {"send": 1.0, "wait": 4.0, "receive": 95.0}, 200, "text/event-stream", stream,
                 events=[[T0 + 0.005 - 3e-6, first], [result_at, second], [late_at, len(stream)]])
    post = _entry("POST", "messages/?session_id=abc123", T0 + 0.010, {"send": 1.0, "wait": 1.0, "receive": 1.0}, 202,
                  "text/plain", b"Accepted", posted=INIT)
    har = tmp_path / "legacy.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                       "entries": [get, post]}}), encoding="utf-8")
    db = str(tmp_path / "legacy.db")
    result = cli("import", "--db", db, str(har))
    assert result.returncode == 0, result.stderr.decode()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT transport FROM sessions").fetchall() == [("sse",)]
        frames = conn.execute("SELECT direction, CAST(raw AS BLOB), ts FROM frames ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert [(d, raw) for d, raw, _ in frames] == [("c2s", INIT), ("s2c", RESULT), ("s2c", LATE)]
    assert abs(frames[1][2] - result_at) < 1e-6 and abs(frames[2][2] - late_at) < 1e-6


def test_a_stdio_session_is_one_line_naming_the_formats_that_hold_it(tmp_path, sdk_python):
    db = tmp_path / "stdio.db"
    result = run([sdk_python, tool("sdk_client.py"), "legacy", "sdk", "--",
                  *tee(db, sdk_python, tool("sdk_server.py"), name="s")], timeout=120)
    assert result.returncode == 0
    out = tmp_path / "x.har"
    result = cli("export", "--db", str(db), "--format", "har", "-o", str(out))
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.count(b"\n") == 1 and b"jsonl or otlp" in result.stderr


def test_an_answer_that_is_not_utf8_is_base64_in_the_har():
    from mcptap.report import har

    content = har._content(b"\xff\xfe{}", "application/json")
    assert content["encoding"] == "base64" and base64.b64decode(content["text"]) == b"\xff\xfe{}"
    assert "encoding" not in har._content("é".encode(), "application/json")
