"""Output is safe and bounded: terminal and bidi characters from
the traffic are escaped in every command and in the HTML report, every file written from
recorded frames is 0600, a spool merges only into the session its recorder wrote (and counts
what it stored), and many tiny sessions give bounded memory and output. A hostile server (a real
process recorded by `mcptap record`) and a hostile log (imported) put escape sequences, C1
controls and bidi characters in a protocolVersion, a stderr line, a method, a label and a session
id: every text face prints them escaped, every JSON face and SARIF as JSON escapes, and replay
never runs the command a recording names unless asked."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import stat
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from mcptap import store

from mcptap.readers import importer, importstate

from mcptap.wire import framelog
from mcptap.store.writer import Spool
from tests.conftest import mcptap, run, wait_for
from tests.support.http_helpers import free_port, http_server
from tests.support.inprocess import cli

# A session name that sets the terminal's title, rings its bell, turns it red and reverses what follows.
HOSTILE = "evil\x1b]0;pwned\x07\x1b[31m\u202egnp.exe\u2066\u200f"
RAW_MARKS = ("\x1b", "\x07", "\u202e", "\u2066", "\u200f")


def hostile_log(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"record": "session", "session": HOSTILE, "transport": "stdio", "label": HOSTILE + "L",
                             "started_at": 1764460800.0}) + "\n")
        fh.write(json.dumps({"session": HOSTILE, "seq": 1, "ts": 1764460800.5, "direction": "c2s",
                             "raw": '{"jsonrpc":"2.0","id":1,"method":"to\u202eols/\x1b[2Jlist"}'}) + "\n")
    return path


def assert_no_raw_marks(text: str) -> None:
    assert not [m for m in RAW_MARKS if m in text], repr(text[:400])


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, str]:
    """A database holding the hostile session (imported once), and what the import printed."""
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "h.db"
    result = cli("import", "--db", str(db), str(hostile_log(tmp / "hostile.jsonl")))
    assert result.returncode == 0, result.stderr
    return db, result.stdout.decode("utf-8")


def test_import_message_escapes_terminal_and_bidi_characters_of_a_session_name(imported):
    _, out = imported
    assert_no_raw_marks(out)
    assert "\\u202e" in out and "\\x1b" in out


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl"])
def test_sessions_escapes_terminal_and_bidi_characters_in_every_format(imported, fmt):
    db, _ = imported
    result = cli("sessions", "--db", str(db), "--format", fmt)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    assert_no_raw_marks(out)
    if fmt != "table":  # the same value, written as JSON escapes
        objects = json.loads(out)["sessions"] if fmt == "json" else [json.loads(line) for line in out.splitlines()]
        assert [o["id"] for o in objects] == [HOSTILE]


def test_export_writes_the_same_values_with_bidi_characters_as_json_escapes(imported):
    db, _ = imported
    result = cli("export", "--db", str(db))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    assert_no_raw_marks(out)
    assert json.loads(out.splitlines()[0])["session"] == HOSTILE


def test_html_report_escapes_bidi_and_escape_characters(imported, tmp_path):
    db, _ = imported
    report = tmp_path / "r.html"
    result = cli("report", "--db", str(db), "-o", str(report), timeout=120)
    assert result.returncode == 0, result.stderr
    html = report.read_text(encoding="utf-8")
    assert_no_raw_marks(html)
    assert "\\u202e" in html


# -- file modes ----------------------------------------------------------------------------------

OUTPUTS = {
    "export": lambda db, out: ("export", "--db", db, "-o", out),
    "analyze-table": lambda db, out: ("analyze", "--db", db, "--fail-on", "never", "-o", out),
    "analyze-sarif": lambda db, out: ("analyze", "--db", db, "--fail-on", "never", "--format", "sarif", "-o", out),
    "report": lambda db, out: ("report", "--db", db, "-o", out),
}


@pytest.mark.parametrize(("command", "existing"), [("export", False), ("report", False), ("analyze-table", True),
                                                   ("analyze-sarif", True)])
def test_every_output_file_written_from_frames_is_readable_by_its_owner_only(imported, tmp_path, command, existing):
    db, _ = imported
    out = tmp_path / "out"
    if existing:
        out.write_text("old", encoding="utf-8")
        out.chmod(0o644)
    result = cli(*OUTPUTS[command](str(db), str(out)))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.stat().st_size > 3


def test_an_output_file_that_cannot_be_created_is_one_line_and_exit_2(imported, tmp_path):
    db, _ = imported
    result = cli("analyze", "--db", str(db), "-o", str(tmp_path / "no" / "such" / "dir.txt"))
    assert result.returncode == 2
    assert result.stderr.decode().startswith("mcptap: error:") and b"Traceback" not in result.stderr


# -- spools ----------------------------------------------------------------------------------------

def recorded_session(db: Path, sid: str, seqs: range) -> dict:
    """A session as a recorder writes it (recorder, host, pid, started_at), with these frames."""
    row = {"id": sid, "transport": "stdio", "label": "rec", "started_at": 1764460800.25,
           "recorder": "mcptap test record", "host": "hostA", "pid": 4242}
    conn = store.connect(db)
    with store.write_transaction(conn):
        store.insert_session(conn, row)
        store.insert_rows(conn, [store.frame_row(sid, s, 1764460801.0 + s, "c2s", b'{"n":%d}' % s, 0) for s in seqs],
                          [])
    conn.close()
    return row


def spool_of(db: Path, row: dict, seqs: range) -> str:
    """The spool the recorder's own Spool writes for this session row, holding these frames."""
    spool = Spool(str(db), row, warn=lambda m: None)
    spool.write([store.frame_row(row["id"], s, 1764460801.0 + s, "c2s", b'{"n":%d}' % s, 0) for s in seqs], [])
    spool.end(1764460900.0, 0)
    return spool.path


def stored_frames(db: Path, sid: str) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT seq FROM frames WHERE session_id = ? ORDER BY seq", (sid,))]
    finally:
        conn.close()


def test_a_spool_merge_adds_only_the_frames_its_session_is_missing_and_counts_those(tmp_path):
    db = tmp_path / "m.db"
    row = recorded_session(db, "0193aaaa-0000-7000-8000-000000000001", range(1, 4))
    path = spool_of(db, row, range(2, 7))  # 2 and 3 already stored
    result = cli("import", "--db", str(db), path)
    assert result.returncode == 0, result.stderr
    assert stored_frames(db, row["id"]) == [1, 2, 3, 4, 5, 6]
    assert re.search(rb": 3 frames,", result.stdout), result.stdout


def test_a_forged_spool_never_appends_to_a_session_another_recorder_wrote(tmp_path):
    db = tmp_path / "f.db"
    row = recorded_session(db, "victim", range(1, 3))
    forged = dict(row, host="elsewhere", pid=1)
    path = spool_of(tmp_path / "other.db", forged, range(1, 6))
    result = cli("import", "--db", str(db), path)
    assert result.returncode == 0, result.stderr
    assert stored_frames(db, "victim") == [1, 2]
    assert result.stderr.decode().startswith("mcptap: warning:")
    conn = sqlite3.connect(db)
    try:
        (other,) = conn.execute("SELECT id FROM sessions WHERE id != 'victim' AND label = 'rec'").fetchone()
    finally:
        conn.close()
    assert stored_frames(db, other) == [1, 2, 3, 4, 5]


# -- many tiny sessions ------------------------------------------------------------------------------

def tiny_sessions(path: Path, n: int, *, interleave: int = 0) -> Path:
    """`n` one-frame sessions (a request nobody answers: a warning each, an error in every tenth);
    `interleave`: session 0 also gets a frame without seq after every `interleave` sessions."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            sid = f"s{i:06d}"
            fh.write(framelog.dumps(framelog.session_record({"id": sid, "transport": "stdio", "label": "tiny",
                                                             "started_at": 1764460800.0 + i})) + "\n")
            raw = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' + ("" if i % 10 else "}")
            fh.write(framelog.dumps(framelog.frame_record(sid, 1, 1764460800.0 + i, "c2s", raw.encode())) + "\n")
            if interleave and i and i % interleave == 0:
                fh.write(json.dumps({"session": "s000000", "ts": 1764460800.0 + i, "direction": "s2c",
                                     "raw": '{"n":%d}' % i}) + "\n")
    return path


def test_an_import_of_many_sessions_keeps_only_the_open_ones_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "BATCH_ROWS", 200)  # small batches and blocks: what is left is per session
    monkeypatch.setattr(framelog, "BLOCK_BYTES", 32 << 10)
    monkeypatch.setattr(importer, "MAX_OPEN", 50, raising=False)
    monkeypatch.setattr(importstate, "FILTER_BITS", 1 << 16)
    log = tiny_sessions(tmp_path / "many.jsonl", 6000, interleave=1000)
    conn = store.connect(tmp_path / "many.db")
    tracemalloc.start()
    try:
        found = importer.import_file(conn, str(log))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found) == 6000 and found[0].name == "s000000" and found[5999].name == "s005999"
    assert found[0].frames == 6  # its own and five more after it was set aside, seq continuing
    assert stored_frames(tmp_path / "many.db", "s000000") == [1, 2, 3, 4, 5, 6]
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 6000
    conn.close()
    assert peak < 3 << 20, peak  # every session kept in memory: over 6 MiB


def test_import_and_the_analysis_table_of_many_sessions_fit_a_screen(tmp_path):
    db = tmp_path / "t.db"
    log = tiny_sessions(tmp_path / "t.jsonl", 300)
    result = cli("import", "--db", str(db), str(log))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert len(lines) <= 25 and re.fullmatch(r"and 280 more sessions: 280 frames, 0 stderr lines", lines[-1])
    result = cli("analyze", "--db", str(db), "--fail-on", "never", timeout=120)
    assert result.returncode == 0, result.stderr
    table = result.stdout.decode().splitlines()
    assert len(table) < 80, len(table)
    assert re.fullmatch(r"and 250 more sessions: 0 with errors, 250 with warnings at worst, 0 with infos only, 0 clean",
                        next(line for line in table if line.startswith("and ")))
    listed = table[2:52]
    assert all(re.match(r"s\d{6} .* 1 +0 +1 ", line) for line in listed[:30])  # the 30 with errors first
    result = cli("analyze", "--db", str(db), "--fail-on", "never", "--format", "jsonl", timeout=120)
    assert len(result.stdout.splitlines()) == 600  # json and jsonl keep every finding


# -- a hostile server's strings on the terminal, in SARIF, and its command never run -----------------

# What a hostile server (or log) puts where mcptap prints it: a protocolVersion that sets the window
# title, clears the screen and writes the clipboard (OSC 52), then reverses what follows (U+202E),
# opens an isolate (U+2066) and starts a C1 control sequence (U+009B, CSI); a stderr line, a method
# name, a label and a session id of the same kind.
EVIL_VERSION = "2025-06-18\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\u202e\u2066\u009b31m\u200f"
EVIL_STDERR = "log \x1b]0;title\x07\u2066\u009b2J\ufeff"
EVIL_METHOD = "tools/\u202ecall\u009b\x1b[2J"
EVIL_LABEL = "time\x1b[31m\u202e\u009b"
EVIL_ID = "sess\u202e\u2066\u009b\x1b[2J"

# The server: answers initialize with EVIL_VERSION, says EVIL_STDERR, answers an id nobody sent.
EVIL_SERVER = r"""
import json, sys
version, err = sys.argv[1], sys.argv[2]
sys.stdin.buffer.readline()
print(json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "evil", "version": "1"}}}, ensure_ascii=False), flush=True)
sys.stdin.buffer.readline()
print(err, file=sys.stderr, flush=True)
print(json.dumps({"jsonrpc": "2.0", "id": 99, "result": {"protocolVersion": version}}, ensure_ascii=False), flush=True)
"""
CLIENT_LINES = (json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}) + "\n"
                + json.dumps({"jsonrpc": "2.0", "id": 1, "method": EVIL_METHOD}, ensure_ascii=False) + "\n")


def assert_printable(text: str) -> None:
    """Nothing in `text` but printable characters and line ends: no C0 or C1 control, no ESC, no
    bidi or other format character, whatever the traffic held."""
    raw = sorted({f"U+{ord(ch):04X}" for ch in text if not ch.isprintable() and ch != "\n"})
    assert not raw, f"{raw} in {text[:300]!r}"


@pytest.fixture(scope="module")
def evil(tmp_path_factory) -> dict:
    """A database holding a session recorded (mcptap record, a real server process) from the
    hostile server, and a session imported from a frame-log whose id, label, command, stderr
    line and protocolVersion are hostile and whose command would create `marker`."""
    tmp = tmp_path_factory.mktemp("evil")
    server = tmp / "evil_server.py"
    server.write_text(EVIL_SERVER, encoding="utf-8")
    db = tmp / "evil.db"
    recorded = cli("record", "--db", str(db), "--name", EVIL_LABEL, "--", sys.executable, str(server),
                          EVIL_VERSION, EVIL_STDERR, input=CLIENT_LINES.encode("utf-8"))
    assert recorded.returncode == 0, recorded.stderr
    marker = tmp / "marker"
    log = tmp / "evil.jsonl"
    records = [{"record": "session", "session": EVIL_ID, "transport": "stdio", "label": EVIL_LABEL + "-imported",
                "command": json.dumps(["touch", str(marker)]), "started_at": 1764460800.0, "ended_at": 1764460801.0}]
    for seq, (direction, raw) in enumerate([("c2s", CLIENT_LINES.splitlines()[0]),
                                            ("s2c", json.dumps({"jsonrpc": "2.0", "id": 0, "result": {
                                                "protocolVersion": EVIL_VERSION, "capabilities": {}}},
                                                ensure_ascii=False)),
                                            ("c2s", CLIENT_LINES.splitlines()[1])], 1):
        records.append({"session": EVIL_ID, "seq": seq, "ts": 1764460800.0 + seq / 10, "direction": direction,
                        "raw": raw})
    records.append({"record": "stderr", "session": EVIL_ID, "seq": 1, "ts": 1764460800.05, "raw": EVIL_STDERR})
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    imported = cli("import", "--db", str(db), str(log))
    assert imported.returncode == 0, imported.stderr
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY started_at")]
    finally:
        conn.close()
    (live,) = [i for i in ids if i != EVIL_ID]
    return {"db": db, "live": live, "imported": EVIL_ID, "marker": marker, "server": server, "tmp": tmp}


def printed(result: subprocess.CompletedProcess) -> str:
    out = result.stdout.decode("utf-8") + result.stderr.decode("utf-8")
    assert_printable(out)
    return out


@pytest.mark.parametrize("which", ["live", "imported"])
@pytest.mark.parametrize("how", [(), ("--full",), ("--follow",), ("--no-stderr",)])
def test_show_prints_a_servers_protocol_version_and_stderr_escaped(evil, how, which):
    result = cli("show", "--db", str(evil["db"]), evil[which], *how)
    assert result.returncode == 0, result.stderr
    out = printed(result)
    assert "revision 2025-06-18\\x1b]0;pwned\\x07" in out  # shown, visibly
    if "--no-stderr" not in how:
        assert "log \\x1b]0;title" in out  # a stderr line (cut to the terminal's width)


@pytest.mark.parametrize("args", [
    ("analyze", "--fail-on", "never"),
    ("analyze", "--fail-on", "never", "--max-per-code", "0"),
    ("sessions",),
    ("diff", "LIVE", "IMPORTED"),
    ("replay", "IMPORTED", "--command", "SERVER", "--no-record", "--timeout", "5"),
    ("replay", "LIVE", "--command", "SERVER", "--no-record", "--timeout", "5"),
], ids=["analyze", "analyze-all", "sessions", "diff", "replay-imported", "replay-live"])
def test_every_text_face_prints_the_hostile_strings_escaped(evil, args):
    server = shlex.join([sys.executable, str(evil["server"]), EVIL_VERSION + "x", EVIL_STDERR])
    argv = [{"LIVE": evil["live"], "IMPORTED": evil["imported"], "SERVER": server}.get(a, a) for a in args]
    result = cli(argv[0], "--db", str(evil["db"]), *argv[1:], timeout=120)
    assert result.returncode in (0, 1), result.stderr
    out = printed(result)
    assert "\\x1b" in out or "\\u202e" in out  # the strings are there, as escapes


@pytest.mark.parametrize("fmt", ["json", "jsonl", "sarif"])
def test_json_and_sarif_write_the_hostile_strings_as_json_escapes_and_keep_their_values(evil, fmt):
    result = cli("analyze", "--db", str(evil["db"]), "--fail-on", "never", "--format", fmt, timeout=120)
    assert result.returncode == 0, result.stderr
    out = printed(result)
    if fmt == "sarif":
        found = {r["properties"]["session"] for r in json.loads(out)["runs"][0]["results"]}
    elif fmt == "json":
        found = {f["session"] for f in json.loads(out)["findings"]}
    else:
        found = {json.loads(line)["session"] for line in out.splitlines()}
    assert EVIL_ID in found


def test_replay_never_runs_the_command_a_recording_names_unless_asked(evil):
    result = cli("replay", "--db", str(evil["db"]), evil["imported"], "--no-record", "--timeout", "5")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "--command-from-log" in printed(result)
    assert not evil["marker"].exists()


def test_replay_with_command_from_log_prints_the_command_escaped_before_it_runs_it(evil):
    conn = sqlite3.connect(evil["db"])
    try:
        command = conn.execute("SELECT command FROM sessions WHERE id = ?", (evil["live"],)).fetchone()[0]
    finally:
        conn.close()
    result = cli("replay", "--db", str(evil["db"]), evil["live"], "--command-from-log", "--no-record",
                        "--timeout", "5", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    printed(result)
    first = result.stderr.decode("utf-8").splitlines()[0]
    assert "running the server command from the recording" in first and str(evil["server"]) in first
    assert "\\x1b]0;pwned" in first and json.loads(command)[-2] == EVIL_VERSION


@pytest.mark.parametrize("args", [
    ("export",), ("show", "LIVE", "--format", "json"), ("show", "IMPORTED", "--format", "jsonl"),
    ("sessions", "--format", "json"), ("diff", "LIVE", "IMPORTED", "--format", "json"),
], ids=["export", "show-json", "show-jsonl", "sessions-json", "diff-json"])
def test_every_json_face_writes_the_hostile_strings_as_json_escapes(evil, args):
    argv = [{"LIVE": evil["live"], "IMPORTED": evil["imported"]}.get(a, a) for a in args]
    result = cli(argv[0], "--db", str(evil["db"]), *argv[1:], timeout=120)
    assert result.returncode in (0, 1), result.stderr
    out = printed(result)
    documents = [json.loads(out)] if args[-1] == "json" else [json.loads(line) for line in out.splitlines()]
    strings = "\n".join(strings_of(documents))  # the values, as they were
    assert EVIL_ID in strings or EVIL_VERSION in strings or EVIL_LABEL in strings


def strings_of(value):
    """Every string in a JSON value, member names included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_of(v)


def test_sessions_follow_prints_the_hostile_names_escaped(evil):
    from mcptap.report import follow

    lines: list[str] = []
    stop = threading.Event()
    worker = threading.Thread(target=follow.follow_sessions, args=(str(evil["db"]), lines.append),
                              kwargs={"stop": stop})
    worker.start()
    try:
        wait_for(lambda: len(lines) >= 4, 30, "a line as each session started and ended")
    finally:
        stop.set()
        worker.join(10)
    assert_printable("\n".join(lines))
    assert any("\\u202e" in line for line in lines)


def test_replay_over_http_of_a_hostile_protocol_version_puts_nothing_unsendable_in_a_header(evil):
    port = free_port()
    argv = mcptap("serve", "--db", str(evil["db"]), evil["imported"], "--listen", f"127.0.0.1:{port}")
    with http_server(argv, port) as base:  # answers initialize with EVIL_VERSION, as recorded
        result = cli("replay", "--db", str(evil["db"]), evil["imported"], "--url", f"{base}/mcp",
                            "--no-record", "--timeout", "5", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert b"Traceback" not in result.stderr and not printed(result).count("mcptap: error")
