"""`mcptap export` then `mcptap import` keeps everything, over real recordings: the real `mcp` SDK's
client and server through the stdio tee and through the proxy (Streamable HTTP, SSE and JSON
answers, and the legacy HTTP+SSE transport), in the 2025-11-25 and the 2026-07-28 eras, and the
demo (whose HTTP server breaks a transport rule). The export of the import is the same file, byte
for byte; the recorded tables and the analysis are the same."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from tests.conftest import analyze_json, run, tee, tool
from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server
from tests.support.inprocess import cli

HTTP_CASES = [  # (server mode, client transport, path, client mode)
    ("resumable", "streamable", "/mcp", "legacy"),  # SSE events with ids
    ("streamable", "streamable", "/mcp", "auto"),
    ("json", "streamable", "/mcp", "auto"),
    ("sse", "sse", "/sse", "legacy"),
]

TABLES = {
    "sessions": "SELECT * FROM sessions ORDER BY id",
    "frames": "SELECT session_id, seq, ts, direction, CAST(raw AS BLOB), typeof(raw), size, incomplete, exchange_id, "
              "event_id, redacted FROM frames ORDER BY session_id, seq",
    "stderr_lines": "SELECT session_id, seq, ts, CAST(raw AS BLOB), typeof(raw), incomplete FROM stderr_lines "
                    "ORDER BY session_id, seq",
    "exchanges": "SELECT * FROM exchanges ORDER BY id",
}


@pytest.fixture(scope="module")
def recording(sdk_python, tmp_path_factory):
    """One database holding real sessions of every transport and both eras."""
    folder = tmp_path_factory.mktemp("roundtrip")
    db = folder / "all.db"
    for mode in ("legacy", "auto"):  # stdio: 2025-11-25, then 2026-07-28
        result = run([sdk_python, tool("sdk_client.py"), mode, "sdk", "--",
                      *tee(db, sdk_python, tool("sdk_server.py"), name=f"stdio-{mode}")], timeout=120)
        assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    for server_mode, transport, path, client_mode in HTTP_CASES:
        with sdk_http_server(sdk_python, server_mode) as upstream, \
                mcptap_proxy(db, upstream, "--name", f"{server_mode}-{client_mode}") as proxy:
            try:
                sdk_client(sdk_python, client_mode, transport, proxy.url + path)
            finally:
                assert proxy.stop() == 0, proxy.errors
    result = cli("demo", "--db", str(db), timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    return db


def tables(db) -> dict[str, list]:
    conn = sqlite3.connect(db)
    try:
        return {name: conn.execute(query).fetchall() for name, query in TABLES.items()}
    finally:
        conn.close()


def test_the_recording_covers_every_transport_both_eras_and_findings_only_exchanges_tell(recording):
    conn = sqlite3.connect(recording)
    transports = {t for (t,) in conn.execute("SELECT transport FROM sessions")}
    events = conn.execute("SELECT count(*) FROM frames WHERE event_id IS NOT NULL").fetchone()[0]
    conn.close()
    assert transports == {"stdio", "http", "sse"} and events > 0
    _, report = analyze_json(recording)
    assert {s["revision"] for s in report["sessions"]} >= {"2025-11-25", "2026-07-28"}
    assert "notification-not-accepted" in {f["code"] for f in report["findings"]}


def test_export_import_export_is_byte_identical_and_keeps_every_table_and_every_finding(recording, tmp_path):
    first, second, copy = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "copy.db"
    assert cli("export", "--db", str(recording), "-o", str(first)).returncode == 0
    imported = cli("import", "--db", str(copy), str(first))
    assert imported.returncode == 0, imported.stderr
    assert cli("export", "--db", str(copy), "-o", str(second)).returncode == 0
    assert second.read_bytes() == first.read_bytes()
    assert tables(copy) == tables(recording)
    _, original = analyze_json(recording)
    _, again = analyze_json(copy)
    def judged(sessions):  # when each was analysed differs, by nature
        return [{k: v for k, v in s.items() if k not in ("analyzed", "analyzed_at")} for s in sessions]

    assert again["findings"] == original["findings"] and judged(again["sessions"]) == judged(original["sessions"])
    assert again["methods"] == original["methods"]


def test_an_http_session_imported_under_a_new_id_keeps_its_exchanges_apart_from_the_original(recording, tmp_path):
    log, db = tmp_path / "log.jsonl", tmp_path / "twice.db"
    assert cli("export", "--db", str(recording), "-o", str(log)).returncode == 0
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    assert cli("import", "--db", str(db), "--new-id", str(log)).returncode == 0
    conn = sqlite3.connect(db)
    exchanges = dict(conn.execute("SELECT session_id, count(*) FROM exchanges GROUP BY session_id"))
    dangling = conn.execute("SELECT count(*) FROM frames f WHERE exchange_id IS NOT NULL AND NOT EXISTS "
                            "(SELECT 1 FROM exchanges x WHERE x.id = f.exchange_id AND x.session_id = f.session_id)")
    assert dangling.fetchone()[0] == 0
    conn.close()
    per_session = "SELECT session_id, count(*) FROM exchanges GROUP BY session_id"
    original = dict(sqlite3.connect(recording).execute(per_session))
    assert sorted(exchanges.values()) == sorted(list(original.values()) * 2)
    _, report = analyze_json(db)
    codes = [f["code"] for f in report["findings"]]
    assert codes.count("notification-not-accepted") == 2 * [f["code"] for f in analyze_json(recording)[1]["findings"]
                                                           ].count("notification-not-accepted")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
