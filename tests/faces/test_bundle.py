"""`mcptap bundle`: a recording with planted secrets (frames, a stderr line, the command line, an
HTTP Authorization header, all kept with --no-redact) packs into a zip that holds none of them,
with the analysis as JSON and SARIF and the versions of client and server; `mcptap import` of the
zip gives the frames and findings that importing the same recording with redaction gives."""

from __future__ import annotations

import json
import sqlite3
import zipfile

from tests.conftest import mcptap
from tests.support.inprocess import cli
from tests.support.sessions import err, handshake, note, ok, req

SECRETS = ["hunter2-planted", "sk-planted-api-key-0001", "ghp_plantedtoken00000001", "planted-bearer-token-77"]


def _framelog(path):
    frames = handshake() + [
        ("c2s", req(1, "tools/call", {"name": "login", "arguments": {"user": "u", "password": SECRETS[0]}})),
        ("s2c", ok(1, {"content": [{"type": "text", "text": "welcome"}]})),
        ("c2s", req(2, "tools/call", {"name": "configure", "arguments": {"settings": {"api_key": SECRETS[1]}}})),
        ("s2c", err(2, -32602, "bad settings")),
        ("c2s", note("notifications/bogus")),
    ]
    lines = [{"record": "session", "session": "leaky", "transport": "stdio",
              "command": json.dumps(["leaky", "--api-key", SECRETS[2]])}]
    lines += [{"session": "leaky", "ts": 1764460800.0 + n, "direction": d, "raw": raw} for n, (d, raw) in enumerate(frames)]
    lines.append({"record": "stderr", "session": "leaky", "ts": 1764460801.5, "raw": f"starting with token={SECRETS[2]}"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _har(path):
    body = req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "har-client", "version": "9.1"}})
    answer = ok(1, {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "har-server",
                                                                                        "version": "3.2"}})
    entry = {"startedDateTime": "2026-11-30T00:00:00.000Z", "time": 10,
             "request": {"method": "POST", "url": "http://127.0.0.1:9/mcp", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [{"name": "Authorization", "value": f"Bearer {SECRETS[3]}"},
                                     {"name": "Content-Type", "value": "application/json"},
                                     {"name": "Accept", "value": "application/json, text/event-stream"}],
                         "queryString": [], "headersSize": -1, "bodySize": len(body),
                         "postData": {"mimeType": "application/json", "text": body}},
             "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                          "headers": [{"name": "Content-Type", "value": "application/json"},
                                      {"name": "Mcp-Session-Id", "value": "s-1"}],
                          "content": {"size": len(answer), "mimeType": "application/json", "text": answer},
                          "redirectURL": "", "headersSize": -1, "bodySize": len(answer)},
             "cache": {}, "timings": {"send": 1, "wait": 5, "receive": 1}}
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}), encoding="utf-8")


def _frames(db) -> list:
    conn = sqlite3.connect(db)
    try:
        return sorted(conn.execute("SELECT direction, CAST(raw AS BLOB) FROM frames").fetchall())
    finally:
        conn.close()


def _findings(db) -> list:
    report = json.loads(cli("analyze", "--db", str(db), "--format", "json", "--fail-on", "never").stdout)
    return sorted((f["code"], f["frame"]) for f in report["findings"])


def test_a_bundle_of_a_leaky_recording_holds_no_secret_and_imports_to_the_redacted_frames(tmp_path):
    log, har = tmp_path / "leaky.jsonl", tmp_path / "capture.har"
    _framelog(log)
    _har(har)
    db = tmp_path / "leaky.db"
    assert cli("import", "--db", str(db), "--no-redact", str(log), str(har)).returncode == 0
    raw = db.read_bytes() + (tmp_path / "leaky.db-wal").read_bytes() if (tmp_path / "leaky.db-wal").exists() else db.read_bytes()
    assert all(s.encode() in raw for s in SECRETS)  # planted, kept

    out = tmp_path / "bug.zip"
    result = cli("bundle", "--db", str(db), "-o", str(out))
    assert result.returncode == 0, result.stderr.decode()
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        contents = b"".join(z.read(n) for n in names)
        manifest = json.loads(z.read("bundle.json"))
        analysis = json.loads(z.read("analysis.json"))
        sarif = json.loads(z.read("analysis.sarif"))
    assert {"bundle.json", "frames.jsonl", "http.har", "analysis.json", "analysis.sarif", "report.html"} <= names
    assert not [s for s in SECRETS if s.encode() in contents]
    assert b"[redacted:" in contents
    assert manifest["mcptap"] and {("har-client", "9.1"), ("har-server", "3.2")} <= {
        (x["name"], x.get("version")) for s in manifest["sessions"] for x in (s.get("client"), s.get("server")) if x}
    assert sarif["version"] == "2.1.0" and len(analysis["sessions"]) == 2

    back = tmp_path / "back.db"
    result = cli("import", "--db", str(back), str(out))
    assert result.returncode == 0, result.stderr.decode()
    redacted = tmp_path / "redacted.db"
    assert cli("import", "--db", str(redacted), str(log), str(har)).returncode == 0
    assert _frames(back) == _frames(redacted)
    assert _findings(back) == _findings(redacted) == _findings(db)


def test_a_zip_that_is_not_a_bundle_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "x.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("hello.txt", "hi")
    result = cli("import", "--db", str(tmp_path / "d.db"), str(bad))
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1 and b"not an mcptap bundle" in result.stderr


def test_the_check_finds_a_credential_left_in_a_database_recorded_without_redaction(tmp_path):
    import pytest

    from mcptap import store
    from mcptap.report import bundle

    log = tmp_path / "leaky.jsonl"
    _framelog(log)
    for flag, leaks in (("--no-redact", True), (None, False)):
        db = tmp_path / f"{flag or 'redacted'}.db"
        assert cli("import", "--db", str(db), *([flag] if flag else []), str(log)).returncode == 0
        conn = store.open_existing(str(db))
        try:
            if leaks:
                with pytest.raises(bundle.SecretLeft):
                    bundle.check_redacted(conn, store.session_ids(conn))
            else:
                assert bundle.check_redacted(conn, store.session_ids(conn)) > 0
        finally:
            conn.close()
