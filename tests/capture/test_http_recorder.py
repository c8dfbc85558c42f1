"""The mitmproxy addon (addons/http/tap.py) driven hook by hook with mitmproxy's own test
flows. `tctx.cycle()` never calls a stream function, so the tap is called here as mitmproxy
would: each chunk, then b"" at the end."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from mitmproxy import flow as mflow
from mitmproxy.test import taddons, tflow

from mcptap.addons.http.tap import McpTap
from tests.conftest import rows, wait_for

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":5}}}'
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1}}'
RESULT = b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}'


def post(body: bytes, session: str | None = None, path: str = "/mcp"):
    f = tflow.tflow(resp=True)
    f.request.method, f.request.path, f.request.content = "POST", path, body
    f.request.headers["content-type"] = "application/json"
    f.request.headers["accept"] = "application/json, text/event-stream"
    if session:
        f.request.headers["mcp-session-id"] = session
    return f


def sse_answer(f, encoding: str | None = None, session: str | None = None):
    f.response.headers.clear()
    f.response.headers["content-type"] = "text/event-stream"
    if encoding:
        f.response.headers["content-encoding"] = encoding
    if session:
        f.response.headers["mcp-session-id"] = session
    f.response.content = None


@pytest.fixture
def tap(tmp_path):
    addon = McpTap()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcptap_db=str(tmp_path / "rec.db"))
        yield addon
        if addon.journal is not None:
            addon.done()
    tctx.master.event_loop.close()


def test_a_gzip_sse_stream_is_recorded_decoded_and_forwarded_as_it_came(tap):
    f = post(CALL, session="S1")
    tap.request(f)
    sse_answer(f, "gzip")
    tap.responseheaders(f)
    body = gzip.compress(b"event: message\ndata: " + PROGRESS + b"\n\nevent: message\ndata: " + RESULT + b"\n\n")
    pieces = [body[i:i + 7] for i in range(0, len(body), 7)]
    forwarded = [f.response.stream(p) for p in pieces] + [f.response.stream(b"")]
    tap.response(f)
    db = tap.journal.db_path
    tap.done()
    assert b"".join(forwarded) == body and forwarded[:-1] == pieces
    assert rows(db, "SELECT direction, CAST(raw AS BLOB) FROM frames ORDER BY seq") == [
        ("c2s", CALL), ("s2c", PROGRESS), ("s2c", RESULT)]
    assert rows(db, "SELECT content_encoding, events, outcome FROM exchanges") == [("gzip", 2, "complete")]


def test_an_aborted_stream_keeps_its_frames_and_shutdown_closes_the_session(tap):
    f = post(CALL, session="S1")
    tap.request(f)
    sse_answer(f)
    tap.responseheaders(f)
    f.response.stream(b"data: " + PROGRESS + b"\n\ndata: {\"jsonrpc\":")  # cut inside the second event
    f.error = mflow.Error("client disconnected")
    tap.error(f)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT CAST(raw AS BLOB), incomplete FROM frames ORDER BY seq") == [
        (CALL, 0), (PROGRESS, 0), (b'{"jsonrpc":', 1)]
    assert rows(db, "SELECT outcome FROM exchanges") == [("error: client disconnected",)]
    assert rows(db, "SELECT ended_at IS NOT NULL FROM sessions") == [(1,)]


def test_a_stream_open_at_shutdown_is_recorded_to_its_last_event(tap):
    f = tflow.tflow(resp=True)
    f.request.headers["accept"] = "text/event-stream"
    f.request.headers["mcp-session-id"] = "S1"
    tap.request(f)
    sse_answer(f)
    tap.responseheaders(f)
    f.response.stream(b"data: " + PROGRESS + b"\n\n")
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT CAST(raw AS BLOB) FROM frames") == [(PROGRESS,)]
    assert rows(db, "SELECT method, outcome FROM exchanges") == [("GET", "open at shutdown")]
    assert rows(db, "SELECT ended_at IS NOT NULL FROM sessions") == [(1,)]


def test_the_initialize_post_joins_the_session_its_answer_assigns(tap):
    f = post(INIT)
    tap.request(f)
    sse_answer(f, session="abc")
    tap.responseheaders(f)
    f.response.stream(b"data: " + RESULT + b"\n\n")
    f.response.stream(b"")
    tap.response(f)
    g = post(CALL, session="abc")
    tap.request(g)
    g.response.headers["content-type"] = "application/json"
    g.response.content = RESULT
    tap.responseheaders(g)
    tap.response(g)
    db = tap.journal.db_path
    tap.done()
    assert len(rows(db, "SELECT id FROM sessions")) == 1
    assert [r[0] for r in rows(db, "SELECT seq FROM frames ORDER BY seq")] == [1, 2, 3, 4]
    assert rows(db, "SELECT assigned_session FROM exchanges ORDER BY started_at LIMIT 1") == [("abc",)]


def test_a_delete_ends_its_session(tap):
    f = post(CALL, session="S9")
    tap.request(f)
    tap.responseheaders(f)
    tap.response(f)
    d = tflow.tflow(resp=True)
    d.request.method = "DELETE"
    d.request.headers["mcp-session-id"] = "S9"
    tap.request(d)
    tap.responseheaders(d)
    tap.response(d)
    tap.journal.close()
    db = tap.journal.db_path
    tap.journal = None
    assert rows(db, "SELECT ended_at IS NOT NULL FROM sessions") == [(1,)]


def test_a_stream_that_cannot_be_decoded_is_forwarded_untouched_and_the_fault_recorded(tap):
    f = post(CALL, session="S1")
    tap.request(f)
    sse_answer(f, "gzip")
    tap.responseheaders(f)
    garbage = b"this is not gzip at all"
    assert f.response.stream(garbage) == garbage
    assert f.response.stream(b"more") == b"more"
    tap.response(f)
    db = tap.journal.db_path
    tap.done()
    (outcome,) = rows(db, "SELECT outcome FROM exchanges")[0]
    assert outcome.startswith("not decodable:")


def test_a_stream_function_set_by_another_addon_is_kept(tap):
    f = post(CALL, session="S1")
    tap.request(f)
    sse_answer(f)
    f.response.stream = lambda chunk: chunk.upper()
    tap.responseheaders(f)
    assert f.response.stream(b"data: x\n\n") == b"DATA: X\n\n"


def test_traffic_that_is_not_mcp_is_not_recorded(tap):
    f = tflow.tflow(resp=True)  # a plain GET, no MCP headers, no event stream
    tap.request(f)
    tap.responseheaders(f)
    tap.response(f)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT count(*) FROM exchanges") == [(0,)]


def legacy_stream_and_post(tap, endpoint: bytes):
    """A legacy GET stream that announces `endpoint`, and a POST to it answered 202."""
    stream = tflow.tflow(resp=True)
    stream.request.path = "/sse"
    stream.request.headers["accept"] = "text/event-stream"
    tap.request(stream)
    sse_answer(stream)
    tap.responseheaders(stream)
    stream.response.stream(b"event: endpoint\ndata: " + endpoint + b"\n\n")
    p = post(CALL, path=endpoint.decode())
    tap.request(p)
    p.response.status_code, p.response.content = 202, b"Accepted"
    p.response.headers["content-type"] = "text/plain"
    tap.responseheaders(p)
    tap.response(p)
    return stream


def test_legacy_posts_join_the_stream_that_announced_their_endpoint(tap):
    stream = legacy_stream_and_post(tap, b"/messages/?session_id=abc123")
    stream.response.stream(b"event: message\ndata: " + RESULT + b"\n\n")
    stream.response.stream(b"")
    tap.response(stream)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT transport FROM sessions") == [("sse",)]
    assert rows(db, "SELECT CAST(raw AS BLOB) FROM frames ORDER BY seq") == [(CALL,), (RESULT,)]
    assert rows(db, "SELECT endpoint FROM exchanges WHERE method = 'GET'") == [("/messages/?session_id=abc123",)]


@pytest.mark.parametrize("post_first", [False, True])
def test_a_legacy_endpoint_and_first_message_in_one_chunk_are_one_session_whichever_comes_first(tap, post_first):
    stream = tflow.tflow(resp=True)
    stream.request.path = "/sse"
    stream.request.headers["accept"] = "text/event-stream"
    tap.request(stream)
    sse_answer(stream)
    tap.responseheaders(stream)
    p = post(CALL, path="/messages/?session_id=abc123")
    if post_first:  # the POST's request seen before the stream's first chunk
        tap.request(p)
    stream.response.stream(b"event: endpoint\ndata: /messages/?session_id=abc123\n\nevent: message\ndata: " + RESULT +
                           b"\n\n")
    if not post_first:
        tap.request(p)
    p.response.status_code, p.response.content = 202, b"Accepted"
    p.response.headers["content-type"] = "text/plain"
    tap.responseheaders(p)
    tap.response(p)
    stream.response.stream(b"")
    tap.response(stream)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT transport FROM sessions") == [("sse",)]
    assert sorted(rows(db, "SELECT CAST(raw AS BLOB) FROM frames")) == sorted([(CALL,), (RESULT,)])
    assert rows(db, "SELECT endpoint FROM exchanges WHERE method = 'GET'") == [("/messages/?session_id=abc123",)]


def test_a_stream_whose_first_message_comes_before_an_endpoint_event_is_no_legacy_stream(tap):
    stream = tflow.tflow(resp=True)
    stream.request.path = "/sse"
    stream.request.headers["accept"] = "text/event-stream"
    tap.request(stream)
    sse_answer(stream)
    tap.responseheaders(stream)
    stream.response.stream(b"data: " + PROGRESS + b"\n\nevent: endpoint\ndata: /messages/?session_id=abc123\n\n")
    stream.response.stream(b"")
    tap.response(stream)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT transport FROM sessions") == [("http",)]
    assert rows(db, "SELECT endpoint FROM exchanges") == [(None,)]


def test_a_token_in_a_legacy_endpoint_is_redacted_as_in_the_exchange_url(tap):
    stream = legacy_stream_and_post(tap, b"/messages/?session_id=abc123&token=s3cr3t-endpoint")
    stream.response.stream(b"")
    tap.response(stream)
    db = tap.journal.db_path
    tap.done()
    (endpoint, redacted), = rows(db, "SELECT endpoint, redacted FROM exchanges WHERE method = 'GET'")
    (url,), = rows(db, "SELECT url FROM exchanges WHERE method = 'POST'")
    assert "s3cr3t" not in endpoint and url.endswith(endpoint)  # the same stand-in as in the URL
    assert "endpoint:query:token" in redacted


def test_a_database_that_cannot_be_opened_is_an_options_error(tmp_path):
    from mitmproxy import exceptions

    addon = McpTap()
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError, match="cannot open the database"):
            tctx.configure(addon, mcptap_db=str(tmp_path / "no" / "such" / "dir" / "x.db"))
    tctx.master.event_loop.close()


def test_deflate_streams_are_decoded_too(tap):
    f = post(CALL, session="S1")
    tap.request(f)
    sse_answer(f, "deflate")
    tap.responseheaders(f)
    f.response.stream(zlib.compress(b"data: " + RESULT + b"\n\n"))
    f.response.stream(b"")
    tap.response(f)
    db = tap.journal.db_path
    tap.done()
    assert rows(db, "SELECT CAST(raw AS BLOB) FROM frames WHERE direction = 's2c'") == [(RESULT,)]
    assert json.loads(RESULT)["id"] == 2


def _init_then(tap, follow_up):
    """initialize answered with session id abc on one client connection, then `follow_up`
    (a flow) on the same connection; returns the database path."""
    f = post(INIT)
    tap.request(f)
    f.response.headers["content-type"] = "application/json"
    f.response.headers["mcp-session-id"] = "abc"
    f.response.content = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'
    tap.responseheaders(f)
    tap.response(f)
    follow_up.client_conn = f.client_conn
    later = f.response.timestamp_end + 1  # test flows all carry the same times
    follow_up.request.timestamp_start, follow_up.request.timestamp_end = later, later + 0.001
    follow_up.response.timestamp_start, follow_up.response.timestamp_end = later + 0.002, later + 0.003
    tap.request(follow_up)
    follow_up.response.headers["content-type"] = "application/json"
    follow_up.response.content = RESULT
    tap.responseheaders(follow_up)
    tap.response(follow_up)
    db = tap.journal.db_path
    tap.done()
    return db


@pytest.mark.parametrize("session_header, code", [(None, "session-id-missing"), ("other", "session-id-mismatch")])
def test_a_request_on_the_sessions_connection_without_its_id_stays_in_it_and_is_reported(tap, session_header, code):
    from mcptap import engine

    follow = post(CALL, session=session_header)
    follow.request.headers["mcp-protocol-version"] = "2025-11-25"
    db = _init_then(tap, follow)
    assert len(rows(db, "SELECT id FROM sessions")) == 1
    report = engine.analyze(db, store_results=False)
    assert code in [f[3] for f in report.findings]


def test_a_stateless_request_on_that_connection_is_a_session_of_its_own(tap):
    follow = post(CALL)
    follow.request.headers["mcp-protocol-version"] = "2026-07-28"
    db = _init_then(tap, follow)
    assert len(rows(db, "SELECT id FROM sessions")) == 2


def test_headers_are_redacted_and_serialised_in_the_recorder_process_not_on_the_event_loop(tap, monkeypatch):
    """The event loop queues an exchange's header fields as mitmproxy holds them; decoding,
    redaction and JSON are the recorder process's work (it stores them as before)."""
    from mcptap.redaction import Redactor

    calls = []
    for name in ("headers", "url"):
        real = getattr(Redactor, name)
        monkeypatch.setattr(Redactor, name, lambda self, *a, real=real, name=name: calls.append(name) or real(self, *a))
    f = post(CALL, session="S1", path="/mcp?token=t0ps3cret")
    f.request.headers["authorization"] = "Bearer s3cret"
    tap.request(f)
    f.response.headers["content-type"] = "application/json"
    f.response.content = RESULT
    tap.responseheaders(f)
    tap.response(f)
    assert calls == ["url"]  # the upstream of the new session: once a session, not once an exchange
    calls.clear()
    g = post(CALL, session="S1")
    tap.request(g)
    tap.responseheaders(g)
    tap.response(g)
    assert calls == []
    db = tap.journal.db_path
    tap.done()
    (headers, url, redacted) = rows(db, "SELECT request_headers, url, redacted FROM exchanges ORDER BY started_at, rowid")[0]
    assert "s3cret" not in headers and "t0ps3cret" not in url
    assert ["authorization", "query:token"] == json.loads(redacted)


def test_when_the_recorder_process_dies_recording_goes_on_inside_the_proxy(tap, capfd):
    f = post(CALL, session="S1")
    f.request.headers["authorization"] = "Bearer s3cret"
    tap.request(f)
    sse_answer(f)
    tap.responseheaders(f)
    f.response.stream(b"data: " + PROGRESS + b"\n\n")
    journal = tap.journal
    wait_for(lambda: not journal.ops, 10, "the shipper to hand the first ops over")
    journal._proc.kill()
    journal._proc.wait()
    f.response.stream(b"data: " + RESULT + b"\n\n")
    f.response.stream(b"")
    tap.response(f)
    db = journal.db_path
    tap.done()
    assert "recording goes on inside the proxy" in capfd.readouterr().err
    recorded = [r[0] for r in rows(db, "SELECT CAST(raw AS BLOB) FROM frames ORDER BY seq")]
    assert RESULT in recorded  # what came after the process died is stored
    (headers, outcome) = rows(db, "SELECT request_headers, outcome FROM exchanges")[0]
    assert outcome == "complete"  # its row made inside the proxy now, redacted as ever
    assert "s3cret" not in headers and "Bearer [redacted:" in headers


def test_a_recorder_process_that_falls_behind_costs_the_proxy_disk_not_memory(tmp_path):
    """The recorder process stopped (SIGSTOP) while 40 MB of SSE chunks pass: the queue spills
    to its overflow file; once the process runs again, every event is stored."""
    import os
    import signal

    from mcptap.addons.http.recorder import RemoteJournal

    journal = RemoteJournal(str(tmp_path / "slow.db"))
    os.kill(journal._proc.pid, signal.SIGSTOP)
    try:
        journal.session({"id": "s", "transport": "http", "started_at": 1.0})
        journal.stream("x", "s", None)
        for i in range(10_000):  # distinct objects, as chunks off the wire are (marshal shares repeated ones)
            event = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%d%s"}}\n\n' % (
                i, b"y" * 4000)
            journal.chunk("x", 2.0 + i * 1e-6, event)
        wait_for(lambda: journal.queue.overflowed > 0, 30, "the queue to spill to its file")
    finally:
        os.kill(journal._proc.pid, signal.SIGCONT)
    journal.close_stream("x", 3.0)
    journal.close()
    assert rows(journal.db_path, "SELECT count(*) FROM frames") == [(10_000,)]
