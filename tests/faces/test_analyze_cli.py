"""`mcptap analyze`, end to end on real database files: formats, exit codes, stored tables,
policy, and bad input (one line, exit 2). Run in-process (tests/support/inprocess.py), but for the
exit status the shell sees, as a real process."""

import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from mcptap.store import BUSY_TIMEOUT_S
from tests.conftest import analyze_json, copy_database, mcptap, run, tool
from tests.support.inprocess import cli
from tests.support.sessions import handshake, note, ok, req, write_log

VIOLATIONS = handshake() + [
    ("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []})),
    ("s2c", "booting..."),                                           # parse-error (not stdio here)
    ("c2s", '{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":1,"a":2}}'), ("s2c", ok(2)),  # duplicate-key
    ("s2c", ok(99)),                                                 # unknown-response-id
    ("c2s", note("notifications/cancelled", {"requestId": 42})),   # cancel-unknown-request (info)
]


@pytest.fixture(scope="module")
def incident_once(tmp_path_factory):
    """A database holding one imported session with known violations, imported once for the module."""
    folder = tmp_path_factory.mktemp("incident")
    log, db = folder / "incident.jsonl", folder / "incident.db"
    write_log(log, VIOLATIONS, "incident")
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    return db


@pytest.fixture
def incident(tmp_path, incident_once):
    """A database holding one imported session with known violations (each test its own copy), its log beside it."""
    write_log(tmp_path / "incident.jsonl", VIOLATIONS, "incident")
    return copy_database(incident_once, tmp_path / "incident.db")


def test_the_json_report_follows_the_contract_and_the_exit_status_says_errors_were_found(incident):
    status, report = analyze_json(incident)
    assert status == 1
    (session,) = report["sessions"]
    assert session["id"] == "incident" and session["revision"] == "2025-06-18"
    assert session["revision_source"] == "initialize" and session["frames"] == len(VIOLATIONS)
    assert (session["errors"], session["warnings"], session["infos"]) == (2, 1, 1)
    codes = {(f["frame"], f["code"]) for f in report["findings"]}
    assert codes == {(6, "parse-error"), (7, "duplicate-key"), (9, "unknown-response-id"), (10, "cancel-unknown-request")}
    assert {"code", "severity", "session", "frame", "index", "message", "related_frame"} == set(report["findings"][0])


@pytest.mark.parametrize("fail_on, expected", [("error", 1), ("warning", 1), ("never", 0)])
def test_fail_on_sets_the_exit_status(incident, fail_on, expected):
    assert analyze_json(incident, "--fail-on", fail_on)[0] == expected


def test_the_process_exits_with_the_status_fail_on_sets(incident):
    assert run(mcptap("analyze", "--db", str(incident), "--fail-on", "never")).returncode == 0
    assert run(mcptap("analyze", "--db", str(incident), "--fail-on", "error")).returncode == 1


def test_info_findings_alone_exit_0_unless_asked(tmp_path):
    log, db = tmp_path / "l.jsonl", tmp_path / "l.db"
    write_log(log, handshake() + [("c2s", note("notifications/cancelled", {"requestId": 42}))], "incident")
    cli("import", "--db", str(db), str(log))
    status, report = analyze_json(db, "--fail-on", "warning")
    assert status == 0 and [f["code"] for f in report["findings"]] == ["cancel-unknown-request"]


def test_results_are_stored_in_messages_findings_and_analyses_and_the_recorded_tables_are_untouched(incident):
    conn = sqlite3.connect(incident)
    before = conn.execute("SELECT seq, ts, direction, raw FROM frames ORDER BY seq").fetchall()
    analyze_json(incident)
    analyze_json(incident)  # run twice: rewritten, not doubled
    assert conn.execute("SELECT seq, ts, direction, raw FROM frames ORDER BY seq").fetchall() == before
    assert conn.execute("SELECT count(*) FROM messages WHERE idx IS NULL").fetchone() == (len(VIOLATIONS),)
    assert conn.execute("SELECT count(*) FROM findings").fetchone() == (4,)
    row = conn.execute("SELECT kind, id, method, paired_frame FROM messages WHERE frame_seq = 4").fetchone()
    assert row == ("request", "1", "tools/list", 5)
    assert conn.execute("SELECT revision, errors FROM analyses").fetchone() == ("2025-06-18", 2)


def test_jsonl_prints_one_finding_per_line(incident):
    result = cli("analyze", "--db", str(incident), "--format", "jsonl")
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["session"] == "incident" for line in lines)


def test_sarif_is_2_1_0_with_each_frame_as_a_location(incident):
    result = cli("analyze", "--db", str(incident), "--format", "sarif")
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    run_ = sarif["runs"][0]
    assert {r["id"] for r in run_["tool"]["driver"]["rules"]} == {r["ruleId"] for r in run_["results"]}
    first = run_["results"][0]
    assert first["level"] in ("error", "warning", "note")
    assert first["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].startswith("session/incident/frame/")


def test_the_table_report_ends_with_service_response_times_per_method(incident):
    text = cli("analyze", "--db", str(incident)).stdout.decode()
    assert "findings" in text and "unknown-response-id" in text
    srt = text[text.index("service response time per method"):]
    assert "calls" in srt and "p95 ms" in srt and "tools/list" in srt


def test_ignore_and_severity_options_change_the_verdict(incident):
    status, report = analyze_json(incident, "--ignore-code", "parse-error", "--severity", "unknown-response-id=warning")
    assert status == 0
    assert {f["code"]: f["severity"] for f in report["findings"]}["unknown-response-id"] == "warning"
    assert "parse-error" not in {f["code"] for f in report["findings"]}


def test_a_policy_file_in_the_working_folder_is_applied(incident, tmp_path):
    (tmp_path / "mcptap.toml").write_text('[analyze]\nignore = ["parse-error"]\n'
                                          'severity = { "unknown-response-id" = "info" }\n', encoding="utf-8")
    result = cli("analyze", "--db", str(incident), "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    assert "parse-error" not in result.stdout.decode()


def test_a_read_only_database_still_gets_its_report(incident):
    os.chmod(incident, stat.S_IRUSR)
    os.chmod(incident.parent, stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(incident, os.W_OK):
            pytest.skip("running as a user whom file modes do not stop (root)")
        result = cli("analyze", "--db", str(incident), "--format", "json")
        assert result.returncode == 1
        assert json.loads(result.stdout)["sessions"][0]["id"] == "incident"
        assert b"not stored" in result.stderr and result.stderr.count(b"\n") == 1
    finally:
        os.chmod(incident.parent, stat.S_IRWXU)
        os.chmod(incident, stat.S_IRUSR | stat.S_IWUSR)


def test_a_database_that_stays_locked_still_gets_its_report_and_says_results_were_not_stored(incident):
    locker = subprocess.Popen([sys.executable, tool("locker.py"), str(incident)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with locker:
        assert locker.stdout.readline() == "locked\n"
        result = cli("analyze", "--db", str(incident), "--format", "json", timeout=BUSY_TIMEOUT_S + 60)
        locker.stdin.close()
        assert locker.wait(timeout=30) == 0
    assert result.returncode == 1
    assert json.loads(result.stdout)["sessions"][0]["id"] == "incident"
    assert b"not stored" in result.stderr and result.stderr.count(b"\n") == 1
    assert not sqlite3.connect(incident).execute("SELECT count(*) FROM messages").fetchone()[0]


@pytest.mark.parametrize("make", ["missing", "text", "no-frames-table", "bad-option"])
def test_bad_input_to_analyze_is_one_line_and_exit_2(tmp_path, incident, make):
    target = {"missing": tmp_path / "nope.db", "text": tmp_path / "notes.txt", "no-frames-table": tmp_path / "other.db",
              "bad-option": incident}[make]
    if make == "text":
        target.write_text("hello\n", encoding="utf-8")
    if make == "no-frames-table":
        sqlite3.connect(target).execute("CREATE TABLE sessions (id)").connection.commit()
    extra = ["--ignore-code", "no-such-code"] if make == "bad-option" else []
    result = cli("analyze", "--db", str(target), *extra)
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1 and b"Traceback" not in result.stderr


def test_an_unknown_revision_option_is_refused(incident):
    result = cli("analyze", "--db", str(incident), "--revision", "2020-01-01")
    assert result.returncode == 2 and b"known:" in result.stderr


def test_sessions_shows_the_revision_and_counts_once_analysed(incident):
    before = json.loads(cli("sessions", "--db", str(incident), "--json").stdout)
    assert before["revision"] is None and before["errors"] is None
    analyze_json(incident)
    after = json.loads(cli("sessions", "--db", str(incident), "--json").stdout)
    assert (after["revision"], after["errors"], after["warnings"]) == ("2025-06-18", 2, 1)


def test_show_puts_kinds_pairs_latency_and_findings_inline(incident):
    text = cli("show", "--db", str(incident), "incident").stdout.decode()
    assert "request tools/list id=1" in text and "#5 10.0ms" in text
    line = next(i for i, l in enumerate(text.splitlines()) if l.lstrip().startswith("9 "))
    assert "unknown-response-id" in text.splitlines()[line + 1]


def test_the_rules_option_lists_every_registered_code_with_its_reference():
    from mcptap.analysis.rules import load

    text = cli("analyze", "--rules").stdout.decode()
    assert all(f"{code}  [" in text for code in load())


def test_worker_processes_give_the_same_results_as_one_process(tmp_path):
    from mcptap import engine

    db = tmp_path / "many.db"
    for i in range(4):
        log = tmp_path / f"s{i}.jsonl"
        write_log(log, VIOLATIONS, session=f"s{i}")
        assert cli("import", "--db", str(db), str(log)).returncode == 0
    assert cli("analyze", "--db", str(db), "--jobs", "2", "--fail-on", "never").returncode == 0
    one = engine.analyze(str(db), workers=1)
    rows_one = sqlite3.connect(db).execute("SELECT * FROM messages ORDER BY session_id, frame_seq, idx").fetchall()
    two = engine.analyze(str(db), workers=2)
    rows_two = sqlite3.connect(db).execute("SELECT * FROM messages ORDER BY session_id, frame_seq, idx").fetchall()
    def timeless(sessions):  # each analysis stamps its own time
        return [{k: v for k, v in s.items() if k != "analyzed_at"} for s in sessions]

    assert timeless(one.sessions) == timeless(two.sessions) and sorted(one.findings) == sorted(two.findings)
    assert rows_one == rows_two and len(rows_one) == 4 * len(VIOLATIONS)


def _noisy_log(path) -> None:
    logs = [("s2c", note("notifications/message", {"level": "info", "data": f"line {i}"})) for i in range(40)]
    write_log(path, handshake(server_caps={}) + logs + [("s2c", ok(98)), ("s2c", ok(99))], session="noisy")


@pytest.fixture(scope="module")
def noisy_once(tmp_path_factory):
    folder = tmp_path_factory.mktemp("noisy")
    log, db = folder / "noisy.jsonl", folder / "noisy.db"
    _noisy_log(log)
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    return db


@pytest.fixture
def noisy(tmp_path, noisy_once):
    """A session whose server logs 40 times without declaring `logging` (40 capability-not-negotiated
    warnings) and answers two ids nobody asked for (each test its own copy), its log beside it."""
    _noisy_log(tmp_path / "noisy.jsonl")
    return copy_database(noisy_once, tmp_path / "noisy.db")


def finding_lines(text: str, code: str) -> list[str]:
    return [line for line in text.splitlines() if code in line]


def test_the_table_lists_the_first_few_of_each_code_then_one_line_for_the_rest(noisy):
    text = cli("analyze", "--db", str(noisy)).stdout.decode()
    lines = finding_lines(text, "capability-not-negotiated")
    assert len(lines) == 6 and "and 35 more, frames 9 to 43" in lines[-1]
    assert len(finding_lines(text, "unknown-response-id")) == 2  # fewer than the limit: all of them
    everything = cli("analyze", "--db", str(noisy), "--max-per-code", "0").stdout.decode()
    assert len(finding_lines(everything, "capability-not-negotiated")) == 40
    assert len(finding_lines(cli("analyze", "--db", str(noisy), "--max-per-code", "2").stdout.decode(),
                             "capability-not-negotiated")) == 3


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_json_and_jsonl_keep_every_finding_whatever_the_table_shows(noisy, fmt):
    result = cli("analyze", "--db", str(noisy), "--format", fmt, "--max-per-code", "1")
    found = json.loads(result.stdout)["findings"] if fmt == "json" else \
        [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert sum(f["code"] == "capability-not-negotiated" for f in found) == 40


def test_show_lists_the_first_few_of_each_code_under_their_frames_then_one_line_for_the_rest(noisy):
    text = cli("show", "--db", str(noisy), "noisy").stdout.decode()
    lines = finding_lines(text, "capability-not-negotiated")
    assert len(lines) == 6 and "and 35 more, frames 9 to 43" in lines[-1]
    transcript = text.splitlines()
    at = transcript.index(lines[-1])
    assert transcript[at - 2].lstrip().startswith("8 ")  # right after the last one shown, under frame 8
    assert len(finding_lines(cli("show", "--db", str(noisy), "noisy", "--max-per-code", "0").stdout.decode(),
                             "capability-not-negotiated")) == 40
    every = json.loads(cli("show", "--db", str(noisy), "noisy", "--format", "json").stdout)
    assert sum(len(f["findings"]) for f in every["frames"]) == 42


def test_the_json_report_has_service_response_times_in_seconds_and_says_whether_results_were_stored(incident):
    status, report = analyze_json(incident)
    (tools,) = [m for m in report["methods"] if m["method"] == "tools/list"]
    assert (tools["calls"], tools["errors"], tools["unanswered"]) == (1, 0, 0)
    assert tools["p50_s"] == pytest.approx(0.01, rel=0.02) and isinstance(tools["max_s"], float)
    assert report["stored"] is True and report["not_stored_reason"] is None


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_the_rules_are_listed_as_json_too(fmt):
    from mcptap.analysis.rules import load

    out = cli("analyze", "--rules", "--format", fmt).stdout
    rules = json.loads(out)["rules"] if fmt == "json" else [json.loads(line) for line in out.decode().splitlines()]
    assert {r["code"] for r in rules} == set(load()) and all(r["ref"] and r["summary"] for r in rules)


def test_the_command_line_lists_as_many_of_each_code_as_the_report_module_says():
    from mcptap import cli, report

    assert cli.PER_CODE == report.PER_CODE


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_analyze_json_prints_the_analyzed_at_it_stored(tmp_path, jobs):
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"
    db = str(tmp_path / "a.db")
    assert run(mcptap("import", "--db", db, str(corpus))).returncode == 0
    done = run(mcptap("analyze", "--db", db, "--format", "json", "--fail-on", "never", "--jobs", jobs))
    assert done.returncode == 0, done.stderr
    printed = {s["id"]: s["analyzed_at"] for s in json.loads(done.stdout)["sessions"]}
    conn = sqlite3.connect(db)
    stored = dict(conn.execute("SELECT session_id, analyzed_at FROM analyses"))
    conn.close()
    assert printed and printed == stored


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_json_report_counts_each_sessions_frames_as_the_session_listing_does(tmp_path, jobs):
    """The report's frame counts and duration come from the frames as the analysis read them, not
    from a second count in the store: they must agree with `mcptap sessions`."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"
    db = str(tmp_path / "a.db")
    assert cli("import", "--db", db, str(corpus)).returncode == 0
    done = cli("analyze", "--db", db, "--format", "json", "--fail-on", "never", "--jobs", jobs)
    assert done.returncode == 0, done.stderr
    reported = {s["id"]: s for s in json.loads(done.stdout)["sessions"]}
    listed = cli("sessions", "--db", db, "--format", "jsonl")
    listed = {s["id"]: s for s in map(json.loads, listed.stdout.decode().splitlines())}
    assert len(reported) > 1 and reported.keys() == listed.keys()
    for sid, session in reported.items():
        for key in ("frames", "c2s", "s2c", "duration_s", "started_at", "ended_at", "label", "transport"):
            assert session[key] == listed[sid][key], (sid, key)
