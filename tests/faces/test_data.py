"""The pandas API (analyzer/data.py) on a small recording whose every frame is known."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

import mcptap.data as mt
from mcptap import engine, store

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
PONG = b'{"jsonrpc":"2.0","id":1,"result":{}}'
LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
NOISE = b"\xff\xfe not UTF-8"
DUP = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":1,"a":2}}'


@pytest.fixture
def recording(tmp_path):
    path = str(tmp_path / "known.db")
    conn = store.connect(path)
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "s-one", "transport": "stdio", "label": "one", "started_at": 1000.0,
                                    "ended_at": 1002.0, "exit_status": 0})
        store.insert_frames(conn, "s-one", [(1, 1000.5, "c2s", PING, 0), (2, 1000.75, "s2c", PONG, 0),
                                            (3, 1001.0, "c2s", LIST, 0), (4, 1001.5, "s2c", NOISE, 0)])
        store.insert_session(conn, {"id": "s-two", "transport": "stdio", "label": "two", "started_at": 2000.0})
        store.insert_frames(conn, "s-two", [(1, 2000.5, "c2s", DUP, 1)])
    conn.close()
    engine.analyze(path, fallback_revision="2025-11-25")
    return path


def test_sessions_have_times_counts_and_revision(recording):
    s = mt.sessions(recording)
    assert list(s["id"]) == ["s-one", "s-two"]
    assert list(s["frames"]) == [4, 1]
    assert s["started_at"][0] == pd.Timestamp(1000.0, unit="s", tz="UTC")
    assert s["duration_s"][0] == 2.0 and s["duration_s"][1] == 0.5
    assert list(s["revision"]) == ["2025-11-25", "2025-11-25"] and s["errors"][0] >= 1


def test_frames_come_typed_and_without_their_text_unless_asked(recording):
    f = mt.frames(recording, session="one")
    assert list(f["seq"]) == [1, 2, 3, 4] and "raw" not in f
    assert list(f["direction"]) == ["c2s", "s2c", "c2s", "s2c"] and f["direction"].dtype == "category"
    assert f["ts"].dtype == "datetime64[ns, UTC]" and list(f["size"]) == [len(PING), len(PONG), len(LIST), len(NOISE)]
    text = mt.frames(recording, session="s-one", columns=["seq", "raw"])
    assert list(text["raw"]) == [PING.decode(), PONG.decode(), LIST.decode(), NOISE]  # bytes where not UTF-8
    assert list(mt.frames(recording, session="two")["incomplete"]) == [True]


def test_a_time_range_selects_frames_and_messages_in_it(recording):
    f = mt.frames(recording, start=1000.6, end="1970-01-01 00:16:41.1")  # 1000.6 <= ts < 1001.1
    assert list(zip(f["session_id"], f["seq"])) == [("s-one", 2), ("s-one", 3)]
    m = mt.messages(recording, start=1000.6, end=1001.1, columns=["frame_seq", "kind"])
    assert list(zip(m["frame_seq"], m["kind"])) == [(2, "response"), (3, "request")]


def test_messages_carry_kind_method_pair_and_latency(recording):
    m = mt.messages(recording, session="one")
    assert list(m["kind"]) == ["request", "response", "request", "unparseable"]
    assert list(m["method"][:3]) == ["ping", "ping", "tools/list"] and pd.isna(m["method"][3])
    assert list(m["paired_frame"][:2]) == [2, 1] and m["paired_frame"][2:].isna().all()
    assert m["latency_s"][0] == pytest.approx(0.25) and m["kind"].dtype == "category"


def test_findings_point_at_their_frame_and_time(recording):
    f = mt.findings(recording, session="one")
    assert {"parse-error", "missing-response"} <= set(f["code"])
    noise = f[f["code"] == "parse-error"].iloc[0]
    assert noise["frame_seq"] == 4 and noise["ts"] == pd.Timestamp(1001.5, unit="s", tz="UTC")
    assert list(mt.findings(recording, session="two", code="duplicate-key")["frame_seq"]) == [1]
    assert set(mt.findings(recording, severity="error")["severity"]) == {"error"}


def test_latency_table_per_method(recording):
    table = mt.latency(mt.messages(recording))
    assert table.loc["ping", "calls"] == 2 and table.loc["tools/list", "unanswered"] == 1
    assert table.loc["ping", "max_s"] == pytest.approx(0.25) and not any(c.endswith("_ms") for c in table.columns)


def test_a_log_is_imported_into_a_fresh_database_and_analyzed_through_the_public_calls(tmp_path):
    log = tmp_path / "incident.jsonl"
    log.write_text('{"session": "inc", "ts": 1000.0, "direction": "c2s", "raw": "{\\"jsonrpc\\":\\"2.0\\",'
                   '\\"id\\":1,\\"method\\":\\"ping\\"}"}\n'
                   '{"session": "inc", "ts": 1000.5, "direction": "s2c", "raw": "noise"}\n', encoding="utf-8")
    for _ in range(2):  # fresh: the second run starts from nothing again
        db = mt.open_db(tmp_path / "audit.db", fresh=True)
        imported = mt.import_log(db, log)
        assert list(zip(imported["id"], imported["frames"])) == [("inc", 2)]
        analysed = mt.analyze(db, revision="2025-11-25")
        assert list(analysed["id"]) == ["inc"] and analysed["errors"][0] >= 1
    assert "parse-error" in set(mt.findings(db)["code"])
    conn = sqlite3.connect(db)  # an open connection serves as well as a path
    assert list(mt.analyze(conn)["id"]) == ["inc"]
    conn.close()
    other = tmp_path / "notes.txt"
    other.write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError):
        mt.open_db(other, fresh=True)
    assert other.read_text(encoding="utf-8") == "mine"


def test_export_and_import_take_a_format_name_from_the_one_registry(recording, tmp_path):
    import gzip
    import json

    from mcptap.report import formats

    packed = tmp_path / "both.jsonl.gz"
    assert mt.export_log(recording, packed) == 5  # every frame of both sessions, compressed by its name
    assert json.loads(gzip.decompress(packed.read_bytes()).splitlines()[0])["record"] == "session"
    plain = tmp_path / "one.log"  # a name that says nothing: the content tells, or the format named
    mt.export_log(recording, plain, session="one", format="jsonl")
    assert formats.reader_for(str(plain)).name == "jsonl"
    db = mt.open_db(tmp_path / "again.db")
    imported = mt.import_log(db, plain, format="jsonl")
    assert list(zip(imported["id"], imported["frames"])) == [("s-one", 4)]
    assert mt.raw(db, "s-one", 4) == NOISE
    spans = tmp_path / "one.otlp.jsonl"
    pytest.importorskip("opentelemetry.proto")
    mt.export_log(recording, spans, session="one", format="otlp")
    lines = [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]
    assert any("resourceSpans" in line for line in lines)
    with pytest.raises(formats.UnknownFormat):
        mt.export_log(recording, tmp_path / "x", format="csv")
    with pytest.raises(formats.UnknownFormat):
        mt.import_log(db, plain, format="csv")
    with pytest.raises(ValueError):
        mt.export_log(recording, tmp_path / "folder", format="parquet")


def test_raw_and_value_give_one_frame_exactly(recording):
    assert mt.raw(recording, "one", 4) == NOISE
    assert mt.value(recording, "one", 1) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with pytest.raises(ValueError):
        mt.value(recording, "one", 4)
    parsed = mt.parse(mt.frames(recording, session="one", columns=["raw"])["raw"])
    assert parsed[1] == {"jsonrpc": "2.0", "id": 1, "result": {}} and parsed[3] is None


def test_an_empty_database_gives_empty_frames(tmp_path):
    path = str(tmp_path / "empty.db")
    store.connect(path).close()
    assert mt.sessions(path).empty and mt.frames(path).empty and mt.messages(path).empty
    assert mt.findings(path).empty and mt.exchanges(path).empty
    assert list(mt.frames(path).columns) == [c for c in mt.FRAME_COLUMNS if c != "raw"]


def test_unknown_columns_are_refused(recording):
    with pytest.raises(ValueError, match="unknown columns"):
        mt.frames(recording, columns=["seq", "nope"])


def test_operations_pair_each_request_with_its_answer_latency_and_outcome(recording):
    ops = mt.operations(recording, session="one")
    assert list(ops["method"]) == ["ping", "tools/list"]
    assert list(ops["outcome"]) == ["ok", "unanswered"]
    assert ops["response_seq"][0] == 2 and pd.isna(ops["response_seq"][1])
    assert ops["latency_s"][0] == pytest.approx(0.25) and pd.isna(ops["latency_s"][1])
    assert ops["id"][0] == "1" and ops["ts"].dt.tz is not None
    assert list(ops["operation"]) == [str(s) for s in ops["seq"]] and list(ops["step"]) == ["request", "request"]
    assert ops["operation_latency_s"][0] == ops["latency_s"][0] and pd.isna(ops["operation_latency_s"][1])
    both = mt.operations(recording)
    assert set(both["session_id"]) == {"s-one", "s-two"}
