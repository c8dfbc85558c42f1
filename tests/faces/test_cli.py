"""The command line: sessions, show, export/import round trip, and one-line errors (exit 2). What a
command prints is checked in-process (tests/support/inprocess.py); the demo, what a new user runs
first, and the recording run as real processes."""

import base64
import os
import datetime as dt
import json
import sqlite3
import sys
from pathlib import Path

import pytest
import typer

from mcptap.cli import app
from tests.conftest import copy_database, frames, mcptap, run, tee
from tests.support.inprocess import cli

CORPUS_DEMO = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"

COMMANDS = sorted(typer.main.get_command(app).commands)  # every command the CLI has


def one_line_error(result) -> bool:
    return result.returncode == 2 and result.stderr.count(b"\n") == 1 and b"Traceback" not in result.stderr


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory):
    """A database with one session holding UTF-8, non-UTF-8 and incomplete frames and stderr,
    recorded once for the module (`recorded` gives each test its own copy)."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    db = tmp_path / "rec.db"
    data = tmp_path / "out.bin"
    data.write_bytes(b'{"jsonrpc":"2.0","id":1,"result":{}}\n\xff\xfe raw\n{"jsonrpc":"2.0","method":"x"')
    script = "import sys; sys.stderr.write('err line\\n'); sys.stdout.buffer.write(sys.stdin.buffer.read())"
    result = run(tee(db, sys.executable, "-c", script, name="demo-ish"),
                 input=data.read_bytes() + b"\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert result.returncode == 0
    return db


@pytest.fixture
def recorded(recorded_once, db):
    """A copy of `recorded_once` at `db`."""
    return copy_database(recorded_once, db)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command):
    result = cli(command, "--help")
    assert result.returncode == 0
    assert b"Example:" in result.stdout


def test_sessions_lists_label_transport_frames_and_exit(recorded):
    result = cli("sessions", "--db", str(recorded), "--json")
    (row,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert (row["label"], row["transport"], row["frames"], row["exit_status"]) == ("demo-ish", "stdio", 8, 0)
    table = cli("sessions", "--db", str(recorded))
    assert b"demo-ish" in table.stdout and table.returncode == 0


def test_sessions_as_json_has_numbers_as_numbers_times_twice_and_null_for_what_is_unknown(recorded):
    result = cli("sessions", "--db", str(recorded), "--format", "json")
    assert result.returncode == 0, result.stderr
    (s,) = json.loads(result.stdout)["sessions"]
    assert isinstance(s["exit_status"], int) and isinstance(s["frames"], int) and isinstance(s["duration_s"], float)
    assert (s["c2s"], s["s2c"]) == (4, 4) and s["command"][0] == sys.executable
    for name in ("started", "ended"):
        stamp = dt.datetime.fromisoformat(s[name].replace("Z", "+00:00"))
        assert stamp.tzinfo == dt.timezone.utc and abs(stamp.timestamp() - s[f"{name}_at"]) < 1e-5
    assert abs(s["duration_s"] - (s["ended_at"] - s["started_at"])) < 1e-5
    assert [s[k] for k in ("revision", "errors", "warnings", "infos", "analyzed_at")] == [None] * 5  # not analysed


def test_sessions_json_is_the_alias_of_jsonl_and_both_give_the_objects_of_the_json_document(recorded):
    document = json.loads(cli("sessions", "--db", str(recorded), "--format", "json").stdout)["sessions"]
    for flag in (["--json"], ["--format", "jsonl"]):
        lines = cli("sessions", "--db", str(recorded), *flag).stdout.decode().splitlines()
        objects = [json.loads(line) for line in lines]
        assert [{k: v for k, v in o.items()} for o in objects] == document
    assert cli("sessions", "--db", str(recorded), "--json", "--format", "json").returncode == 2


def test_show_as_json_gives_every_frame_whole_with_its_analysis_and_marks_stderr_lines(recorded):
    result = cli("show", "--db", str(recorded), "demo-ish", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["session"]["label"] == "demo-ish" and doc["session"]["exit_status"] == 0
    frames = [r for r in doc["frames"] if r["record"] == "frame"]
    stderr = [r for r in doc["frames"] if r["record"] == "stderr"]
    assert [f["seq"] for f in frames] == list(range(1, 9)) and [e["raw"] for e in stderr] == ["err line"]
    ping = next(f for f in frames if f["kind"] == "request")
    assert (ping["method"], ping["id"], ping["direction"], ping["size"]) == ("ping", 1, "c2s", len(ping["raw"]))
    answer = next(f for f in frames if f["seq"] == ping["paired_frame"])
    assert answer["kind"] == "response" and answer["paired_frame"] == ping["seq"] and answer["latency_s"] >= 0
    assert dt.datetime.fromisoformat(ping["time"].replace("Z", "+00:00")).timestamp() == pytest.approx(ping["ts"])
    assert base64.b64decode(frames[1]["raw_b64"]) == b"\xff\xfe raw" and "raw" not in frames[1]
    assert {f["code"] for f in frames[1]["findings"]} == {"parse-error"}
    assert all(f["frame"] == frames[1]["seq"] for f in frames[1]["findings"])


def test_show_as_jsonl_is_the_session_then_one_line_per_frame_and_its_frames_import_back(recorded, tmp_path):
    result = cli("show", "--db", str(recorded), "demo-ish", "--format", "jsonl")
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert records[0]["record"] == "session" and records[0]["label"] == "demo-ish"
    document = json.loads(cli("show", "--db", str(recorded), "demo-ish", "--format", "json").stdout)
    assert records[1:] == document["frames"]
    log = tmp_path / "cut.jsonl"  # a frame line is a frame-log record: cut out, it imports
    log.write_text("".join(json.dumps(r) + "\n" for r in records[1:]), encoding="utf-8")
    copy = tmp_path / "copy.db"
    assert cli("import", "--db", str(copy), str(log)).returncode == 0
    assert frames(copy) == frames(recorded)


def test_show_prints_each_frame_with_direction_size_method_and_id(recorded):
    result = cli("show", "--db", str(recorded), "demo-ish")
    assert result.returncode == 0
    text = result.stdout.decode()
    assert "request ping id=1" in text and "response id=1" in text and "not UTF-8" in text
    assert "err line" in text  # stderr interleaved
    assert text.count("c2s →") == 4 and text.count("s2c ←") == 4


def test_export_then_import_gives_back_identical_frames(recorded, tmp_path):
    out = tmp_path / "log.jsonl"
    assert cli("export", "--db", str(recorded), "-o", str(out)).returncode == 0
    copy = tmp_path / "copy.db"
    result = cli("import", "--db", str(copy), str(out))
    assert result.returncode == 0, result.stderr
    query = "SELECT session_id, seq, ts, direction, CAST(raw AS BLOB), size, incomplete FROM frames ORDER BY seq"
    assert sqlite3.connect(copy).execute(query).fetchall() == sqlite3.connect(recorded).execute(query).fetchall()
    query = "SELECT seq, ts, CAST(raw AS BLOB), incomplete FROM stderr_lines ORDER BY seq"
    assert sqlite3.connect(copy).execute(query).fetchall() == sqlite3.connect(recorded).execute(query).fetchall()
    query = "SELECT id, transport, label, started_at, ended_at, command, exit_status FROM sessions"
    assert sqlite3.connect(copy).execute(query).fetchall() == sqlite3.connect(recorded).execute(query).fetchall()
    # and the non-UTF-8 frame travelled as raw_b64
    assert any("raw_b64" in json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())


def test_import_reads_a_file_as_the_format_from_names_and_an_unknown_name_is_one_line(recorded, tmp_path):
    out = tmp_path / "log.gz.txt"  # a name that says nothing of what it holds
    assert cli("export", "--db", str(recorded), "-o", str(out)).returncode == 0
    copy = tmp_path / "copy.db"
    assert cli("import", "--db", str(copy), "--from", "jsonl", str(out)).returncode == 0
    assert frames(copy) == frames(recorded)
    unknown = cli("import", "--db", str(tmp_path / "other.db"), "--from", "csv", str(out))
    assert one_line_error(unknown) and b"jsonl" in unknown.stderr  # the formats it reads are named
    wrong = cli("import", "--db", str(tmp_path / "other.db"), "--from", "har", str(out))
    assert one_line_error(wrong)


def test_importing_the_same_session_twice_is_refused_unless_asked_for_a_new_id(recorded, tmp_path):
    out = tmp_path / "log.jsonl"
    cli("export", "--db", str(recorded), "-o", str(out))
    again = cli("import", "--db", str(recorded), str(out))
    assert one_line_error(again)
    renamed = cli("import", "--db", str(recorded), "--new-id", str(out))
    assert renamed.returncode == 0
    assert sqlite3.connect(recorded).execute("SELECT count(*), count(DISTINCT label) FROM sessions").fetchone() == (2, 1)


def test_a_frame_log_from_another_tool_becomes_a_session_named_as_in_the_log(tmp_path, db):
    log = tmp_path / "incident.jsonl"
    log.write_text(
        '{"session": "s1", "ts": 1764460800.01, "direction": "c2s", "raw": "{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"method\\":\\"ping\\"}"}\n'
        '{"session": "s1", "ts": 1764460800.02, "direction": "s2c", "raw_b64": "/w=="}\n',
        encoding="utf-8")
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    row = sqlite3.connect(db).execute("SELECT id, label, transport, started_at FROM sessions").fetchone()
    assert row == ("s1", "s1", "import", 1764460800.01)
    assert frames(db) == [b'{"jsonrpc":"2.0","id":1,"method":"ping"}', b"\xff"]


@pytest.mark.parametrize("args", [
    ["show", "--db", "{missing}", "x"],
    ["show", "--db", "{text}", "x"],
    ["show", "--db", "{db}", "no-such-session"],
    ["sessions", "--db", "{text}"],
    ["sessions", "--db", "{otherdb}"],
    ["export", "--db", "{missing}"],
    ["import", "--db", "{db}", "{missing}"],
    ["import", "--db", "{db}", "{text}"],
    ["import", "--db", "{db}", "{badlog}"],
    ["import", "--db", "{db}", "{otherdb}"],
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(recorded, tmp_path, args):
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n", encoding="utf-8")
    badlog = tmp_path / "bad.jsonl"
    badlog.write_text('{"session":"s","ts":1,"direction":"c2s","raw":"x"}\n{"session":"s","ts":"late"}\n',
                      encoding="utf-8")
    otherdb = tmp_path / "other.db"
    sqlite3.connect(otherdb).execute("CREATE TABLE t (x)").connection.commit()
    paths = {"missing": tmp_path / "missing", "text": text, "db": recorded, "badlog": badlog, "otherdb": otherdb}
    result = cli(*[a.format(**paths) for a in args])
    assert one_line_error(result), result.stderr
    assert sqlite3.connect(recorded).execute("SELECT count(*) FROM frames").fetchone() == (8,)


def test_a_log_cut_off_mid_line_imports_what_is_whole_and_warns(tmp_path, db):
    log = tmp_path / "cut.jsonl"
    log.write_bytes(b'{"session":"s","ts":1,"direction":"c2s","raw":"a"}\n{"session":"s","ts":2,"dir')
    result = cli("import", "--db", str(db), str(log))
    assert result.returncode == 0 and b"warning" in result.stderr
    assert frames(db) == [b"a"]


def test_the_database_comes_from_mcptap_db_when_no_option_is_given(tmp_path, recorded):
    result = cli("sessions", "--json", env={"MCPTAP_DB": str(recorded), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert b"demo-ish" in result.stdout


def test_the_demo_records_the_bundled_servers_through_tee_and_proxy_and_prints_transcripts(tmp_path):
    demo_db = tmp_path / "demo.db"
    result = run(mcptap("demo", "--db", str(demo_db)), timeout=120)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "request initialize id=0" in text and "request tools/call id=2" in text
    assert "notification notifications/progress" in text
    assert "not JSON" in text  # the bundled server's stdout log line, on purpose
    assert "stdout-noise" in text and "service response time per method" in text  # and the analysis says so
    assert "notification-not-accepted" in text  # the HTTP server's mistake, on purpose too
    conn = sqlite3.connect(demo_db)
    per_session = dict(conn.execute("SELECT transport, count(*) FROM frames JOIN sessions ON id = session_id "
                                    "GROUP BY transport").fetchall())
    conn.close()
    assert per_session == {"stdio": 17, "http": 17}  # 7 + 10 each way on stdio; 7 + 10 over HTTP
    report = tmp_path / "demo-report.html"
    assert f"The HTML report (every frame, a display filter, the sequence diagrams): {report}" in text
    assert 'id="mcptap-data"' in report.read_text(encoding="utf-8")


def test_the_demo_without_a_database_writes_into_a_folder_it_names_and_speaks_as_the_user_types(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MCPTAP_DB"}
    result = run(mcptap("demo"), timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith("Writing into mcptap-demo/") and "on purpose" in text
    assert "mcptap record --db mcptap-demo/demo.db --name demo -- python -m mcptap.demo.server" in text
    typed = [line for line in text.splitlines() if line.startswith("  mcptap ")]  # the commands it ran
    assert len(typed) == 2 and not any(sys.executable in line or str(tmp_path) in line for line in typed)
    assert "1 session, 17 frames" in text and "1 sessions" not in text
    assert "The HTML report (every frame, a display filter, the sequence diagrams): mcptap-demo/demo-report.html" in text
    assert sorted(p.name for p in (tmp_path / "mcptap-demo").iterdir() if not p.name.endswith(("-wal", "-shm"))) == \
        ["demo-report.html", "demo.db"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcptap-demo"]


def test_report_and_bundle_write_to_stdout_for_dash_and_take_several_sessions(tmp_path):
    db = tmp_path / "d.db"
    assert cli("import", "--db", str(db), str(CORPUS_DEMO)).returncode == 0
    page = cli("report", "--db", str(db), "demo", "demo-http", "-o", "-", timeout=120)
    assert page.returncode == 0 and page.stdout.startswith(b"<!DOCTYPE html>") and page.stdout.rstrip().endswith(b"</html>")
    assert page.stdout.count(b"01a23348-5c71-75f7-bab7-24e36a17b27f") and page.stdout.count(b"01a23348-6563-75bc")
    assert not (tmp_path / "-").exists()
    packed = cli("bundle", "--db", str(db), "demo", "-o", "-", timeout=120, cwd=tmp_path)
    assert packed.returncode == 0 and packed.stdout[:2] == b"PK" and not (tmp_path / "-").exists()


def test_replay_as_json_gives_each_changed_member_as_the_value_the_wire_wrote(tmp_path, db):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    answer = ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
              '"serverInfo":{"name":"mcptap-demo-server","version":1.0}}}')
    log = tmp_path / "r.jsonl"
    log.write_text("".join(json.dumps({"session": "r", "ts": 1.0 + i, "direction": d, "raw": raw}) + "\n" for i, (d, raw) in
                           enumerate([("c2s", json.dumps(init)), ("s2c", answer)])), encoding="utf-8")
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    result = cli("replay", "--db", str(db), "r", "--command", f"{sys.executable} -m mcptap.demo.server",
                        "--no-record", "--timeout", "20", "--format", "json")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["equal"], doc["exit_status"], doc["sent"], doc["error"]) == (False, 1, 1, None)
    changes = {c["path"]: c for m in doc["messages"] for c in m["changes"]}
    version = changes["$.result.serverInfo.version"]
    assert (version["recorded"], version["live"]) == (1.0, "1.0.0")
    assert b'"recorded":1.0,' in result.stdout  # as the wire wrote it, not re-serialised


def test_analyze_as_json_prints_the_analyzed_at_it_stored(recorded):
    result = cli("analyze", "--db", str(recorded), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    (printed,) = json.loads(result.stdout)["sessions"]
    conn = sqlite3.connect(recorded)
    (stored,) = conn.execute("SELECT analyzed_at FROM analyses").fetchall()
    conn.close()
    assert printed["analyzed_at"] == stored[0]
