"""`mcptap import` of frame-log JSONL (analyzer/readers/importer.py, analyzer/wire/framelog.py): streamed in
bounded memory, exact bytes stored as TEXT or BLOB by the store's rule, the reference parser's
verdict kept, progress in frames and bytes, and where each frame was in the file."""

import json
import sqlite3
import tracemalloc

import pytest

from mcptap import store

from mcptap.readers import importer


def write_lines(path, records, *, prefix=b""):
    with open(path, "wb") as fh:
        fh.write(prefix)
        for rec in records:
            fh.write((rec if isinstance(rec, str) else json.dumps(rec)).encode("utf-8", "surrogatepass") + b"\n")


def frame(session, raw, seq=None, ts=1000.0, direction="c2s", **extra):
    rec = {"session": session, "ts": ts, "direction": direction, "raw": raw, **extra}
    if seq is not None:
        rec["seq"] = seq
    return rec


def test_rows_are_written_as_the_file_is_read_so_many_sessions_do_not_pile_up_in_memory(tmp_path, monkeypatch):
    from mcptap.wire import framelog

    monkeypatch.setattr(importer, "BATCH_ROWS", 100)
    monkeypatch.setattr(framelog, "BLOCK_BYTES", 64 << 10)
    payload = "x" * 2000
    records = [frame(f"s{s}", '{"jsonrpc":"2.0","method":"m","params":{"t":"%s"}}' % payload, ts=1000.0 + i)
               for s in range(50) for i in range(90)]  # every session below a batch: 9 MB in all
    log = tmp_path / "many.jsonl"
    write_lines(log, records)
    conn = store.connect(tmp_path / "x.db")
    tracemalloc.start()
    try:
        imported = importer.import_file(conn, str(log))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(s.frames for s in imported) == 50 * 90
    assert peak < 3 << 20, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("record, stored_type, raw", [
    (frame("s", "café ☕ 🙂"), "text", "café ☕ 🙂".encode()),
    (frame("s", "nul \u0000 inside"), "blob", b"nul \x00 inside"),
    ('{"session":"s","ts":1000.0,"direction":"c2s","raw":"lone \\ud800"}', "blob", b"lone \xed\xa0\x80"),
    (frame("s", None, raw_b64="//4A"), "blob", b"\xff\xfe\x00"),
    ({"session": "s", "ts": 1000.0, "direction": "c2s", "raw_b64": "Y2Fmw6k="}, "text", b"caf\xc3\xa9"),
])
def test_each_frame_is_stored_byte_for_byte_as_text_when_it_is_utf8_without_nul_else_as_a_blob(
        tmp_path, record, stored_type, raw):
    if isinstance(record, dict) and record.get("raw") is None:
        record.pop("raw", None)
    log = tmp_path / "one.jsonl"
    write_lines(log, [record])
    conn = store.connect(tmp_path / "x.db")
    importer.import_file(conn, str(log))
    assert conn.execute("SELECT typeof(raw), CAST(raw AS BLOB), size FROM frames").fetchone() == (stored_type, raw, len(raw))


def test_what_orjson_refuses_gets_the_standard_parsers_verdict_a_byte_order_mark_is_read(tmp_path):
    log = tmp_path / "bom.jsonl"
    write_lines(log, [frame("s", "{}"), '{"session":"s","ts":1001.0,"direction":"s2c","raw":"x","meta":{"n":NaN}}'],
                prefix=b"\xef\xbb\xbf")
    conn = store.connect(tmp_path / "x.db")
    (session,) = importer.import_file(conn, str(log))
    assert session.frames == 2


def test_progress_counts_frames_and_bytes_of_the_file_read_so_far(tmp_path, monkeypatch):
    from mcptap.wire import framelog

    monkeypatch.setattr(framelog, "BLOCK_BYTES", 300)
    log = tmp_path / "p.jsonl"
    write_lines(log, [{"record": "session", "session": "s", "transport": "stdio", "started_at": 999.0}]
                + [frame("s", "{}", ts=1000.0 + i) for i in range(25)])
    calls = []
    importer.import_file(store.connect(tmp_path / "x.db"), str(log), progress=lambda f, b: calls.append((f, b)))
    assert len(calls) > 2 and calls[0][0] < 25 and calls[-1] == (25, log.stat().st_size)
    assert all(a[0] <= b[0] and a[1] < b[1] for a, b in zip(calls, calls[1:]))


def test_each_frames_line_follows_the_seq_the_import_gave_it(tmp_path):
    log = tmp_path / "l.jsonl"
    write_lines(log, [
        {"record": "session", "session": "a", "transport": "stdio", "started_at": 999.0},  # line 1
        frame("a", "one"),                 # line 2: seq 1 (file order)
        frame("b", "other session"),       # line 3: b's seq 1
        frame("a", "five", seq=5),         # line 4: seq 5, as written
        frame("a", "after five"),          # line 5: seq 6 (one past the highest)
        frame("a", "three", seq=3),        # line 6: seq 3
        frame("a", "seven"),               # line 7: seq 7
    ])
    conn = store.connect(tmp_path / "x.db")
    found = {s.name: s for s in importer.import_file(conn, str(log), locate=True)}
    assert found["a"].lines.of([1, 3, 5, 6, 7, 2]) == {1: 2, 5: 4, 6: 5, 3: 6, 7: 7}
    assert found["b"].lines.of([1]) == {1: 3}
    rows = dict(conn.execute("SELECT seq, CAST(raw AS TEXT) FROM frames WHERE session_id = 'a'"))
    assert rows == {1: "one", 5: "five", 6: "after five", 3: "three", 7: "seven"}


def test_a_bad_line_late_in_the_file_leaves_nothing_of_the_file_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "BATCH_ROWS", 10)
    log = tmp_path / "bad.jsonl"
    write_lines(log, [frame("s", "{}", ts=1000.0 + i) for i in range(50)] + ['{"session": "s", "direction": "up"}'])
    conn = store.connect(tmp_path / "x.db")
    with pytest.raises(importer.ImportFormatError, match=":51:"):
        importer.import_file(conn, str(log))
    assert conn.execute("SELECT count(*) FROM frames").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_an_import_and_a_reader_of_the_same_file_do_not_block_each_other_for_long(tmp_path):
    db = tmp_path / "x.db"
    log = tmp_path / "r.jsonl"
    write_lines(log, [frame("s", "{}", ts=1000.0 + i) for i in range(100)])
    conn = store.connect(db)
    importer.import_file(conn, str(log))
    reader = sqlite3.connect(db)
    assert reader.execute("SELECT count(*) FROM frames").fetchone() == (100,)


def test_a_file_read_in_many_blocks_stores_every_row_and_stops_at_its_bad_line(tmp_path, monkeypatch):
    from mcptap.wire import framelog

    monkeypatch.setattr(framelog, "BLOCK_BYTES", 4096)
    records = [{"record": "session", "session": "a", "transport": "stdio", "started_at": 999.0}]
    for i in range(300):
        args = {"password": f"secret-{i}"} if i % 7 == 0 else {"q": "café " * (i % 13)}
        records.append(frame("ab"[i % 2], json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                                       "params": {"arguments": args}}), ts=1000.0 + i))
        if i % 50 == 0:
            records.append({"record": "stderr", "session": "a", "ts": 1000.0 + i, "raw": f"log {i}"})
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_lines(good, records)
    write_lines(bad, records[:200] + ["{not json"] + records[200:])
    conn = store.connect(tmp_path / "x.db")
    found = importer.import_file(conn, str(good), locate=True)
    rows = conn.execute("SELECT session_id, seq, ts, direction, typeof(raw), CAST(raw AS BLOB), size, redacted "
                        "FROM frames ORDER BY session_id, seq").fetchall()
    assert len(rows) == 300 and sum(r[7] is not None for r in rows) == 43
    assert not any(b"secret-" in r[5] for r in rows)
    assert conn.execute("SELECT count(*) FROM stderr_lines").fetchone() == (6,)
    assert {s.name: s.lines.of([1])[1] for s in found} == {"a": 2, "b": 4}  # line 3: a stderr line
    monkeypatch.setattr(framelog, "BLOCK_BYTES", 1 << 20)
    assert rows == _imported_in_this_process(tmp_path, good)  # the same rows read in one block
    monkeypatch.setattr(framelog, "BLOCK_BYTES", 4096)
    conn2 = store.connect(tmp_path / "y.db")
    with pytest.raises(importer.ImportFormatError, match=f"{bad}:201:"):
        importer.import_file(conn2, str(bad))
    assert conn2.execute("SELECT count(*) FROM frames").fetchone() == (0,)


def _imported_in_this_process(tmp_path, log):
    conn = store.connect(tmp_path / "reference.db")
    importer.import_file(conn, str(log), redaction=None)
    try:
        return conn.execute("SELECT session_id, seq, ts, direction, typeof(raw), CAST(raw AS BLOB), size, redacted "
                            "FROM frames ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
        for p in tmp_path.glob("reference.db*"):
            p.unlink()
