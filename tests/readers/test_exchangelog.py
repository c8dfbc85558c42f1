"""Frame-log version 2 (analyzer/wire/exchangelog.py, framelog.py, analyzer/readers/exporter.py,
importer.py): an HTTP session's exchanges and its frames' exchange and SSE event id travel through
export and import, so the findings only exchanges tell survive; a session record of version 2 is
the session's whole row; logs of version 1 import as they always did; a wrong field is refused."""

from __future__ import annotations

import io
import json
import sqlite3

import pytest

from mcptap import engine, store
from mcptap.errors import ImportFormatError
from mcptap.outfile import WriteOptions
from mcptap.readers import exporter, importer

T0 = 1764460800.0
POST = [["Host", "127.0.0.1:8000"], ["Content-Type", "application/json"],
        ["Accept", "application/json, text/event-stream"]]


def exchange(xid, started, **fields):
    rec = {"record": "exchange", "session": "web", "id": xid, "method": "POST", "url": "http://127.0.0.1:8000/mcp",
           "status": 200, "request_type": "application/json", "response_type": "application/json",
           "events": 0, "request_headers": POST, "response_headers": [["Content-Type", "application/json"]],
           "started_at": started, "response_at": started + 0.001, "ended_at": started + 0.002, "outcome": "complete"}
    rec.update(fields)
    return rec


def frame(seq, direction, message, **meta):
    rec = {"session": "web", "seq": seq, "ts": T0 + seq / 100, "direction": direction,
           "raw": json.dumps(message, separators=(",", ":"))}
    if meta:
        rec["meta"] = meta
    return rec


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
INIT_OK = {"jsonrpc": "2.0", "id": 0, "result": {
    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
LISTED = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}


def http_log() -> list[dict]:
    """An HTTP session whose server answers the `initialized` notification with 200 instead of 202
    (`notification-not-accepted`: only its exchange tells) and its tools/list over SSE, event id 7."""
    sse = [["Content-Type", "text/event-stream"], ["Mcp-Session-Id", "abc"]]
    return [
        {"record": "session", "session": "web", "version": 2, "transport": "http", "label": "web",
         "started_at": T0, "ended_at": T0 + 1, "upstream": "http://127.0.0.1:8000/mcp"},
        exchange("x1", T0, assigned_session="abc", response_headers=[["Mcp-Session-Id", "abc"]]),
        exchange("x2", T0 + 0.025, mcp_session_id="abc", protocol_version="2025-11-25", response_type=None,
                 response_headers=None),
        exchange("x3", T0 + 0.035, mcp_session_id="abc", protocol_version="2025-11-25",
                 response_type="text/event-stream", events=1, response_headers=sse),
        frame(1, "c2s", INIT, exchange="x1"), frame(2, "s2c", INIT_OK, exchange="x1"),
        frame(3, "c2s", INITIALIZED, exchange="x2"),
        frame(4, "c2s", LIST, exchange="x3"), frame(5, "s2c", LISTED, exchange="x3", event_id="7"),
    ]


def write(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def import_log(db, path, **kw):
    conn = store.connect(str(db))
    try:
        return importer.import_file(conn, path, **kw)
    finally:
        conn.close()


def export_all(db) -> str:
    conn = store.open_existing(str(db))
    try:
        out = io.StringIO()
        exporter.export(conn, out, WriteOptions(sessions=store.session_ids(conn)))
        return out.getvalue()
    finally:
        conn.close()


def codes(db) -> list[str]:
    engine.analyze(str(db), workers=1)
    with sqlite3.connect(db) as conn:
        return sorted(c for (c,) in conn.execute("SELECT code FROM findings"))


def test_an_http_log_keeps_its_exchanges_and_event_ids_and_the_finding_only_they_tell(tmp_path):
    db = tmp_path / "a.db"
    import_log(db, write(tmp_path / "web.jsonl", http_log()))
    assert "notification-not-accepted" in codes(db)
    conn = sqlite3.connect(db)
    refs = conn.execute("SELECT seq, exchange_id, event_id FROM frames ORDER BY seq").fetchall()
    assert refs == [(1, "x1", None), (2, "x1", None), (3, "x2", None), (4, "x3", None), (5, "x3", "7")]
    headers, status = conn.execute("SELECT response_headers, status FROM exchanges WHERE id = 'x3'").fetchone()
    assert json.loads(headers)[1] == ["Mcp-Session-Id", "abc"] and status == 200


def test_export_of_an_import_of_an_export_is_the_same_text_and_the_same_findings(tmp_path):
    first_db, second_db = tmp_path / "a.db", tmp_path / "b.db"
    import_log(first_db, write(tmp_path / "web.jsonl", http_log()))
    first = export_all(first_db)
    import_log(second_db, write(tmp_path / "first.jsonl", [json.loads(line) for line in first.splitlines()]))
    assert export_all(second_db) == first
    assert codes(second_db) == codes(first_db)
    assert '"meta":{"exchange":"x3","event_id":"7"}' in first and first.count('"record":"exchange"') == 3


def test_a_version_2_session_record_is_the_whole_row_and_a_version_1_record_gets_the_imports_own(tmp_path):
    fields = {"record": "session", "session": "s", "transport": "stdio", "started_at": T0}
    one = {"session": "s", "ts": T0, "direction": "c2s", "raw": "{}"}
    for version, label, source in ((None, "s", "log.jsonl"), (2, None, None)):
        db = tmp_path / f"v{version}.db"
        record = fields if version is None else {**fields, "version": version}
        import_log(db, write(tmp_path / "log.jsonl", [record, one]))
        got = sqlite3.connect(db).execute("SELECT label, source, transport FROM sessions").fetchone()
        assert (got[0], got[1] and got[1].rsplit("/", 1)[-1], got[2]) == (label, source, "stdio")


def test_importing_an_http_log_twice_under_new_ids_gives_each_copy_its_own_exchanges(tmp_path):
    db, log = tmp_path / "a.db", write(tmp_path / "web.jsonl", http_log())
    import_log(db, log)
    import_log(db, log, new_id=True)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*), count(DISTINCT session_id) FROM exchanges").fetchone() == (6, 2)
    mixed = conn.execute("SELECT count(*) FROM frames f JOIN exchanges x ON x.id = f.exchange_id "
                         "WHERE x.session_id != f.session_id").fetchone()[0]
    assert mixed == 0 and codes(db).count("notification-not-accepted") == 2


@pytest.mark.parametrize("keep", [False, True])
def test_credentials_in_an_exchange_are_redacted_on_import_unless_kept(tmp_path, keep):
    records = http_log()
    records[1] = exchange("x1", T0, url="http://127.0.0.1:8000/mcp?access_token=hunter2",
                          request_headers=POST + [["Authorization", "Bearer s3cret"]])
    db = tmp_path / "a.db"
    import_log(db, write(tmp_path / "web.jsonl", records), keep_credentials=keep)
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("a.db"))
    assert (b"s3cret" in data, b"hunter2" in data) == (keep, keep)
    redacted = sqlite3.connect(db).execute("SELECT redacted FROM exchanges WHERE id = 'x1'").fetchone()[0]
    assert (redacted is None) == keep


@pytest.mark.parametrize("change", [
    {"record": "session", "session": "web", "version": 3, "transport": "http", "started_at": T0},
    {"record": "session", "session": "web", "version": "2", "transport": "http", "started_at": T0},
    exchange("x9", T0, status="200"),
    exchange("x9", T0, events=-1),
    exchange("x9", T0, request_headers=[["Host"]]),
    exchange("x9", T0, redacted="authorization"),
    exchange("x9", T0, started_at=None),
    exchange("x9", T0, started_at=1e300),
    exchange("", T0),
    exchange("x9", T0, url=7),
    frame(9, "c2s", LIST, exchange=5),
    frame(9, "c2s", LIST, event_id=7),
])
def test_a_wrong_field_of_version_2_is_a_one_line_refusal_of_the_file(tmp_path, change):
    db = tmp_path / "a.db"
    with pytest.raises(ImportFormatError) as refused:
        import_log(db, write(tmp_path / "web.jsonl", http_log() + [change]))
    assert "\n" not in str(refused.value) and "web.jsonl:" in str(refused.value)
    assert sqlite3.connect(db).execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
