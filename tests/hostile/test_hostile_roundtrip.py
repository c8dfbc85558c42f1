"""An OAuth flow recorded through the real `mcptap proxy` in front of the SDK's OAuth-protected
server, exported as a frame log and imported again: every exchange keeps its role, its bodies
(as stored: redacted) and what the proxy rewrote, so the analysis finds exactly what it found in
the recording."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import analyze_json, run
from tests.support.http_helpers import mcptap_proxy
from tests.support.inprocess import cli
from tests.support.oauth import TOKEN, running_oauth_server, stored_bytes

COLUMNS = ("role", "method", "status", "request_body", "response_body", "rewritten")


def exchange_rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM exchanges ORDER BY started_at").fetchall()
    conn.close()
    return rows


def findings(db: Path) -> list[tuple]:
    _status, report = analyze_json(db)
    return sorted((f["code"], f["severity"], f["message"]) for f in report["findings"])


def test_an_oauth_session_exported_and_imported_again_keeps_its_exchanges_and_its_findings(sdk_python, tmp_path):
    import subprocess

    from tests.conftest import tool

    db = tmp_path / "rec.db"
    with running_oauth_server(sdk_python) as (_, rs), mcptap_proxy(db, f"{rs}/mcp") as proxy:
        done = subprocess.run([sdk_python, tool("sdk_oauth_client.py"), "legacy", f"{proxy.url}/mcp"],
                              capture_output=True, timeout=90)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    recorded = exchange_rows(db)
    roles = {r[0] for r in recorded}
    assert {"auth-discovery", "auth-challenge"} <= roles, roles
    assert any(r[5] for r in recorded) and any(r[3] or r[4] for r in recorded)
    log = tmp_path / "rec.jsonl"
    done = cli("export", "--db", str(db), "--format", "jsonl", "-o", str(log))
    assert done.returncode == 0, done.stderr.decode()
    again = tmp_path / "again.db"
    done = cli("import", "--db", str(again), str(log))
    assert done.returncode == 0, done.stderr.decode()
    assert exchange_rows(again) == recorded
    assert findings(again) == findings(db)
    assert TOKEN.search(stored_bytes(again)) is None and TOKEN.search(log.read_bytes()) is None
    assert all(json.loads(r[5]) for r in exchange_rows(again) if r[5])
