"""The live telemetry's queue and sender (analyzer/report/otlp_live.py), in this process: the
spans it builds frame by frame are the export's (analyzer/report/otlp.py) for the same session,
ids and all; its queue drops and counts past its bound, never waits; an endpoint that fails drops
and counts what it cannot send."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.proto")

from mcptap import store  # noqa: E402
from mcptap.api import import_files  # noqa: E402
from mcptap.report import otlp, otlp_env, otlp_http, otlp_live, otlp_live_counts  # noqa: E402
from tests.faces.test_otlp import made_session  # noqa: E402
from tests.support.sessions import write_log  # noqa: E402

CONFIG = otlp_env.Config(otlp_env.Target("http://127.0.0.1:9/v1/traces"),
                         otlp_env.Target("http://127.0.0.1:9/v1/metrics"))


def _spans(requests) -> dict:
    """span id -> (name, kind, trace, parent, start, end, attributes, events but findings)."""
    out = {}
    for request in requests:
        for rs in getattr(request, "resource_spans", ()):
            for ss in rs.scope_spans:
                for s in ss.spans:
                    attrs = {kv.key: str(kv.value).strip() for kv in s.attributes}
                    events = [(e.name, e.time_unix_nano) for e in s.events if e.name != "mcptap.finding"]
                    out[s.span_id] = (s.name, s.kind, s.trace_id, s.parent_span_id, s.start_time_unix_nano,
                                      s.end_time_unix_nano, attrs, events, s.status.code)
    return out


@pytest.fixture
def made_db(tmp_path) -> tuple[str, str]:
    db = str(tmp_path / "made.db")
    list(import_files(db, [str(write_log(tmp_path / "made.jsonl", made_session(), "made"))]))
    conn = store.connect(db)
    [sid] = store.session_ids(conn)
    conn.close()
    return db, sid


def test_the_live_spans_are_the_exports_spans_of_the_same_frames(made_db, monkeypatch):
    db, sid = made_db
    conn = store.connect(db)
    exported = _spans(otlp.requests(conn, [sid]))
    session = store.get_session(conn, sid)
    frames = [(sid, seq, ts, direction, raw) for seq, ts, direction, raw in store.iter_raw_frames(conn, sid)]
    conn.close()
    sent = []

    def export(request, url, headers, **kw):
        sent.append(request)
        return 0, 0, ""

    monkeypatch.setattr(otlp_http, "export", export)
    live = otlp_live.LiveTelemetry(CONFIG, warn=lambda m: None)
    live.session(session)
    for row in frames:
        live.frames([row])
    counts = live.close(30)
    assert counts[sid]["frames_dropped"] == 0 and counts[sid]["spans_dropped"] == 0
    assert _spans(sent) == exported
    assert any(hasattr(r, "resource_metrics") for r in sent)


def test_a_full_queue_drops_and_counts_without_waiting():
    live = otlp_live.LiveTelemetry(CONFIG, warn=lambda m: None, max_frames=2)
    live.frames([("s", i, 1.0, "c2s", b"{}") for i in range(1, 6)])  # the sender never started: nothing taken
    counts = live.close(0)
    assert counts["s"]["frames_dropped"] == 5  # 3 refused by the full queue, 2 never sent


def test_a_queue_bounded_in_bytes_refuses_a_frame_larger_than_what_is_left():
    live = otlp_live.LiveTelemetry(CONFIG, warn=lambda m: None, max_bytes=10)
    live.frames([("s", 1, 1.0, "c2s", b"x" * 8), ("s", 2, 1.0, "c2s", b"x" * 8), ("s", 3, 1.0, "c2s", b"xx")])
    assert live._counts["s"]["frames_dropped"] == 1


def test_an_endpoint_that_fails_drops_and_counts_the_spans_and_says_so_once(made_db, monkeypatch):
    db, sid = made_db
    conn = store.connect(db)
    session = store.get_session(conn, sid)
    frames = [(sid, seq, ts, direction, raw) for seq, ts, direction, raw in store.iter_raw_frames(conn, sid)]
    expected = len(_spans(otlp.requests(conn, [sid])))
    conn.close()

    def export(request, url, headers, **kw):
        raise otlp_http.OtlpError(f"{url}: gave up after 1 attempt (refused)")

    monkeypatch.setattr(otlp_http, "export", export)
    said = []
    live = otlp_live.LiveTelemetry(CONFIG, warn=said.append)
    live.session(session)
    live.frames(frames)
    counts = live.close(30)
    assert counts[sid]["spans_sent"] == 0 and counts[sid]["spans_dropped"] == expected
    assert counts[sid]["points_sent"] == 0 and counts[sid]["points_dropped"] > 0
    assert len(said) == 1 and "live telemetry" in said[0]


@pytest.mark.parametrize("json_encoding", [False, True])
def test_the_spans_reach_a_receiver_as_protobuf_or_as_otlp_json(made_db, json_encoding):
    from tests.support import otlp_receiver

    db, sid = made_db
    conn = store.connect(db)
    session = store.get_session(conn, sid)
    frames = [(sid, seq, ts, direction, raw) for seq, ts, direction, raw in store.iter_raw_frames(conn, sid)]
    exported = _spans(otlp.requests(conn, [sid]))
    conn.close()
    with otlp_receiver.running() as receiver:
        config = otlp_env.resolve(receiver.endpoint, {"OTEL_EXPORTER_OTLP_PROTOCOL":
                                                      "http/json" if json_encoding else "http/protobuf"})
        live = otlp_live.LiveTelemetry(config, warn=lambda m: None)
        live.session(session)
        live.frames(frames)
        counts = live.close(30)
        got = receiver.accepted("/v1/traces")
        kinds = {r.headers["content-type"] for r in receiver.received}
    assert kinds == {"application/json" if json_encoding else "application/x-protobuf"}
    assert _spans(got) == exported
    assert counts[sid]["spans_sent"] == len(exported) and counts[sid]["points_sent"] > 0


def test_a_session_that_ends_has_its_unanswered_requests_sent_and_is_forgotten(monkeypatch):
    sent = []
    monkeypatch.setattr(otlp_http, "export", lambda request, url, headers, **kw: (sent.append(request), (0, 0, ""))[1])
    live = otlp_live.LiveTelemetry(CONFIG, warn=lambda m: None)
    live.session({"id": "h", "transport": "http"})
    live.frames([("h", 1, 1.0, "c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')])
    live.end("h")
    live.frames([("h", 2, 2.0, "s2c", b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}')])  # after its end: alone
    live.close(30)
    outcomes = [kv.value.string_value for s in _spans_of(sent) for kv in s.attributes if kv.key == "mcptap.outcome"]
    assert outcomes == ["unanswered", "unanswered"]  # the CLIENT and SERVER spans of the request, at its end


def _spans_of(requests) -> list:
    return [s for r in requests for rs in getattr(r, "resource_spans", ()) for ss in rs.scope_spans for s in ss.spans]


def test_the_counts_are_kept_while_recording_not_only_at_the_end(made_db, monkeypatch):
    from tests.conftest import wait_for

    db, sid = made_db
    conn = store.connect(db)
    session = store.get_session(conn, sid)
    frames = [(sid, seq, ts, direction, raw) for seq, ts, direction, raw in store.iter_raw_frames(conn, sid)]
    conn.close()

    def export(request, url, headers, **kw):
        raise otlp_http.OtlpError(f"{url}: gave up after 1 attempt (refused)")

    monkeypatch.setattr(otlp_http, "export", export)
    monkeypatch.setattr(otlp_live, "KEEP_S", 0.0)
    kept = []
    live = otlp_live.LiveTelemetry(CONFIG, warn=lambda m: None, keep=kept.append)
    live.session(session)
    live.frames(frames)
    try:
        wait_for(lambda: kept and kept[-1][sid]["spans_dropped"] > 0, 30, "the counts kept while recording")
    finally:
        counts = live.close(30)
    assert all(a != b for a, b in zip(kept, kept[1:]))  # only counts that changed
    assert kept[-1][sid]["spans_dropped"] <= counts[sid]["spans_dropped"]


def test_the_counts_store_writes_them_into_the_session_s_row(made_db):
    db, sid = made_db
    keeper = otlp_live_counts.CountsStore(db)
    try:
        keeper({sid: {"spans_sent": 0, "spans_dropped": 7, "frames_dropped": 1}})
        keeper({sid: {"spans_sent": 0, "spans_dropped": 9, "frames_dropped": 1}})
    finally:
        keeper.close()
    conn = store.connect(db)
    assert store.get_session(conn, sid)["telemetry"] == \
        '{"frames_dropped": 1, "spans_dropped": 9, "spans_sent": 0}'
    conn.close()
