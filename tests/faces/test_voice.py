"""Every command speaks one voice (docs/contract.md, README "Conventions"): one JSON object for a
session, --format on every command that prints, SESSION as an argument, --ignore-code and
--ignore-path, colour through rich that honours NO_COLOR, --color/--no-color and pipes, shell
completion, readable help, and `-`, .gz and .zst for every file of frames. What a command prints is
checked in-process (tests/support/inprocess.py); the colour tests run the real `mcptap` as a
process, on a pseudo-terminal or a pipe."""

import fcntl
import gzip
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import typer

from mcptap.cli import app
from tests.conftest import mcptap, run
from tests.support.inprocess import cli

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"
"""Two sessions (labels demo and demo-http) with findings, recorded live once."""
COMMANDS = sorted(typer.main.get_command(app).commands)
ESC = b"\x1b["


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("voice") / "demo.db"
    assert cli("import", "--db", str(db), str(CORPUS)).returncode == 0
    return db


def on_terminal(argv: list[str], env: dict | None = None, columns: int = 200) -> tuple[int, bytes]:
    """`argv` run with its stdout on a pseudo-terminal `columns` wide: (exit status, what it wrote)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    inherited = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}  # the terminal's size rules
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL,
                            env={**inherited, "TERM": "xterm", **(env or {})})
    os.close(slave)
    out, deadline = bytearray(), time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            out += data
    finally:
        os.close(master)
    return proc.wait(timeout=60), bytes(out)


def without(name: str) -> dict:
    env = dict(os.environ)
    env.pop(name, None)
    return env


# -- one JSON object for a session ------------------------------------------------------------

def test_a_session_is_one_json_object_in_sessions_show_and_analyze(demo_db):
    cli("analyze", "--db", str(demo_db), "--fail-on", "never")
    listed = json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"][0]
    shown = json.loads(cli("show", "demo", "--db", str(demo_db), "--format", "json").stdout)["session"]
    analysed = json.loads(cli("analyze", "demo", "--db", str(demo_db), "--format", "json",
                                     "--fail-on", "never").stdout)["sessions"][0]
    # show adds the exchanges that are no frames; sessions each session's handle (unique among those listed)
    assert set(listed) - {"handle"} == set(shown) - {"exchanges"} == set(analysed)
    volatile = {"analyzed_at", "analyzed", "exchanges"}
    assert {k: v for k, v in listed.items() if k not in volatile | {"handle"}} == \
        {k: v for k, v in shown.items() if k not in volatile} == \
        {k: v for k, v in analysed.items() if k not in volatile}


def test_the_exports_session_record_has_the_session_objects_members_and_values(demo_db):
    (record, *_) = [json.loads(line) for line in cli("export", "demo", "--db", str(demo_db)).stdout.splitlines()]
    listed = json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"][0]
    assert record["record"] == "session" and record["session"] == listed["id"]
    shared = set(record) - {"record", "session", "version"}  # the frame log's own members
    assert "command" in shared and "started_at" in shared
    assert {k: record[k] for k in shared} == {k: listed[k] for k in shared}


def test_analyze_rules_gives_severity_as_one_level_and_severities_as_an_object():
    rules = [json.loads(line) for line in cli("analyze", "--rules", "--format", "jsonl").stdout.splitlines()]
    assert len(rules) > 40
    assert all(isinstance(r["severity"], str) for r in rules)
    assert all(isinstance(r["severities"], dict) and {"jsonrpc", "mcp"} <= set(r["severities"]) for r in rules)
    batch = next(r for r in rules if r["code"] == "batch-used")
    assert batch["severities"]["2025-03-26"] == "info" and batch["severities"]["jsonrpc"] == "info"


# -- --format, SESSION, --ignore-code/--ignore-path ---------------------------------------------

@pytest.mark.parametrize("command", ["sessions", "show", "analyze", "diff", "replay"])
def test_every_command_that_prints_a_report_takes_format_text_and_json_is_a_hidden_alias(command):
    shown = cli(command, "--help").stdout.decode()
    assert re.search(r"--format <text\|", shown)
    assert "--json" not in shown


@pytest.mark.parametrize("command", ["import", "redact"])
def test_import_and_redact_take_format_too(command):
    assert re.search(r"--format <text\|", cli(command, "--help").stdout.decode())


def test_import_and_redact_say_what_they_did_as_json(tmp_path):
    db = tmp_path / "x.db"
    lines = cli("import", "--db", str(db), str(CORPUS), "--format", "jsonl")
    imported = [json.loads(line) for line in lines.stdout.splitlines()]
    assert lines.returncode == 0 and [(i["name"], i["merged"]) for i in imported] == \
        [(i["session"], False) for i in imported] and all(i["frames"] == 17 for i in imported)
    document = json.loads(cli("import", "--db", str(db), str(CORPUS), "--new-id", "--format", "json").stdout)
    assert len(document["imported"]) == 2
    done = json.loads(cli("redact", "--db", str(db), "--format", "json").stdout)
    assert set(done) == {"sessions", "frames", "exchanges", "stderr_lines", "commands", "members"}


def test_the_hidden_json_alias_still_works_and_table_is_text(demo_db):
    assert cli("sessions", "--db", str(demo_db), "--json").stdout == \
        cli("sessions", "--db", str(demo_db), "--format", "jsonl").stdout
    assert cli("sessions", "--db", str(demo_db), "--format", "table").stdout == \
        cli("sessions", "--db", str(demo_db), "--format", "text").stdout
    assert json.loads(cli("analyze", "--db", str(demo_db), "--json", "--fail-on", "never").stdout)["findings"]


@pytest.mark.parametrize("command", ["export", "redact", "analyze", "report"])
def test_session_is_an_argument_and_the_old_session_flag_is_hidden(command):
    shown = cli(command, "--help").stdout.decode()
    assert "SESSION" in shown.splitlines()[0]
    assert "--session" not in shown


def test_export_and_analyze_take_sessions_as_arguments_and_still_take_session(demo_db):
    by_argument = cli("export", "demo-http", "--db", str(demo_db))
    by_flag = cli("export", "--session", "demo-http", "--db", str(demo_db))
    assert by_argument.returncode == 0 and by_argument.stdout == by_flag.stdout
    assert {json.loads(line)["session"] for line in by_argument.stdout.splitlines()} == \
        {json.loads(by_argument.stdout.splitlines()[0])["session"]}
    report = json.loads(cli("analyze", "demo-http", "--db", str(demo_db), "--format", "json",
                                   "--fail-on", "never").stdout)
    assert [s["label"] for s in report["sessions"]] == ["demo-http"]


def test_ignore_code_silences_a_code_and_the_old_ignore_says_in_one_line_it_is_deprecated(demo_db):
    def codes(*flags):
        result = cli("analyze", "--db", str(demo_db), "--format", "jsonl", "--fail-on", "never", *flags)
        return {json.loads(line)["code"] for line in result.stdout.splitlines()}, result.stderr

    found, _ = codes()
    assert "parse-error" in found
    new, quiet = codes("--ignore-code", "parse-error")
    old, warned = codes("--ignore", "parse-error")
    assert "parse-error" not in new and new == old
    assert b"deprecated" not in quiet
    assert warned.count(b"\n") == 1 and b"--ignore is deprecated; use --ignore-code" in warned


def test_diff_takes_ignore_path_and_the_old_ignore_says_it_is_deprecated(demo_db):
    new = cli("diff", "demo", "demo", "--db", str(demo_db), "--ignore-path", "$..text")
    old = cli("diff", "demo", "demo", "--db", str(demo_db), "--ignore", "$..text")
    assert new.returncode == old.returncode == 0 and new.stdout == old.stdout and new.stderr == b""
    assert old.stderr == b"mcptap: warning: --ignore is deprecated; use --ignore-path\n"


# -- colour, tables, pipes ----------------------------------------------------------------------

def test_analyze_is_coloured_on_a_terminal_and_not_with_no_color_or_no_color_flag(demo_db):
    argv = mcptap("analyze", "--db", str(demo_db), "--fail-on", "never")
    status, coloured = on_terminal(argv, env={"NO_COLOR": ""})  # empty NO_COLOR: not set (no-color.org)
    assert status == 0 and ESC in coloured
    assert ESC not in on_terminal(argv, env={"NO_COLOR": "1"})[1]
    assert ESC not in on_terminal([*argv, "--no-color"])[1]


def test_piped_output_is_plain_unless_color_is_asked_for(demo_db):
    argv = mcptap("analyze", "--db", str(demo_db), "--fail-on", "never")
    assert ESC not in run(argv, env=without("NO_COLOR")).stdout
    assert ESC in run([*argv, "--color"], env=without("NO_COLOR")).stdout
    assert ESC not in cli("show", "demo", "--db", str(demo_db), "--full").stdout


def test_show_is_coloured_on_a_terminal_unless_no_color(demo_db):
    argv = mcptap("show", "demo", "--db", str(demo_db))
    status, coloured = on_terminal(argv, env={"NO_COLOR": ""})
    assert status == 0 and ESC in coloured and b"parse-error" in coloured
    assert ESC not in on_terminal(argv, env={"NO_COLOR": "1"})[1]


def test_diff_colours_its_verdict_on_a_terminal_or_with_color_and_not_with_no_color(demo_db):
    argv = mcptap("diff", "demo", "demo-http", "--db", str(demo_db))
    status, coloured = on_terminal(argv, env={"NO_COLOR": ""})
    assert status == 1 and ESC in coloured
    assert ESC not in on_terminal(argv, env={"NO_COLOR": "1"})[1]
    assert ESC not in run(argv).stdout and ESC in run([*argv, "--color"]).stdout


def test_sessions_draws_a_table_on_a_terminal_and_plain_whole_lines_when_piped(demo_db):
    status, drawn = on_terminal(mcptap("sessions", "--db", str(demo_db)), env={"NO_COLOR": "1"})
    assert status == 0 and "─".encode() in drawn and ESC not in drawn
    assert ESC in on_terminal(mcptap("sessions", "--db", str(demo_db)), env={"NO_COLOR": ""})[1]
    piped = cli("sessions", "--db", str(demo_db)).stdout.decode()
    ids = [s["id"] for s in json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"]]
    assert "─" not in piped and all(any(line.startswith(i) for line in piped.splitlines()) for i in ids)


ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command, heads", [
    (["sessions"], ["session", "label", "via", "revision", "started", "took", "frames", "err", "warn", "exit"]),
    (["show", "demo"], ["#", "time", "dir", "bytes", "message", "pair", "frame"]),
    (["analyze", "--fail-on", "never"], ["severity", "code", "session", "frame", "message", "method", "calls",
                                         "p50 ms", "max ms"]),
])
def test_tables_fit_the_terminal_they_are_on_with_every_column_and_no_cell_wrapped(demo_db, command, heads, columns):
    status, drawn = on_terminal(mcptap(*command, "--db", str(demo_db)), env={"NO_COLOR": "1"}, columns=columns)
    assert status == 0
    lines = [ANSI.sub(b"", line).rstrip(b"\r").decode() for line in drawn.split(b"\n")]
    lines = [line.split("\r")[-1] for line in lines]  # what a progress bar redrew in place
    assert max(map(len, lines)) <= columns, [line for line in lines if len(line) > columns]
    text = "\n".join(lines)
    assert all(re.search(rf"(^|\s){re.escape(h)}(\s|$)", text, re.M) for h in heads), heads
    if command == ["sessions"]:  # each row one line: a handle, then the label
        rows = [line for line in lines if re.match(r"^[0-9a-f]{4,} ", line)]
        listed = json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"]
        assert sorted(r.split()[0] for r in rows) == sorted(s["handle"] for s in listed)


def test_wide_and_piped_tables_keep_every_cell_whole(demo_db):
    listed = json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"]
    status, wide = on_terminal(mcptap("sessions", "--db", str(demo_db), "--wide"), env={"NO_COLOR": "1"}, columns=80)
    piped = cli("sessions", "--db", str(demo_db)).stdout.decode()
    for s in listed:
        assert s["id"] in wide.decode() and s["id"] in piped and s["started"][:10] in piped


def test_the_terminal_table_shows_a_hostile_label_escaped_and_its_markup_as_text(tmp_path):
    label = "[bold]x[/bold]\x1b]0;owned\x07\u202e"
    log = tmp_path / "hostile.jsonl"
    log.write_text(json.dumps({"session": label, "ts": 1.5, "direction": "c2s", "raw": "{}"}) + "\n", encoding="utf-8")
    db = tmp_path / "h.db"
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    status, drawn = on_terminal(mcptap("sessions", "--db", str(db)), env={"NO_COLOR": ""})
    assert status == 0 and b"[bold]x[/bold]" in drawn and b"\\x1b]0;owned\\x07\\u202e" in drawn
    assert b"\x1b]" not in drawn and "\u202e".encode() not in drawn


def test_no_hand_written_ansi_codes_remain_in_the_product():
    root = Path(__file__).resolve().parents[2]
    found = [str(p.relative_to(root)) for folder in ("analyzer", "addons") for p in (root / folder).rglob("*.py")
             if re.search(r"\\x1b\[|\\033\[|\\u001b\[", p.read_text(encoding="utf-8"))]
    assert found == []


# -- completion and help ------------------------------------------------------------------------

def test_shell_completion_is_on():
    assert b"--install-completion" in cli("--help").stdout
    shown = cli("--show-completion", "bash", env={**os.environ, "SHELL": "/bin/bash"})
    assert shown.returncode == 0 and b"_MCPTAP_COMPLETE" in shown.stdout


@pytest.mark.parametrize("command", ["show", "report", "bundle", "export", "redact"])
def test_completion_completes_session_handles_labels_and_the_newest(demo_db, command):
    listed = json.loads(cli("sessions", "--db", str(demo_db), "--format", "json").stdout)["sessions"]
    env = {**os.environ, "_MCPTAP_COMPLETE": "complete_bash", "COMP_CWORD": "4"}
    words = cli(env={**env, "COMP_WORDS": f"mcptap {command} --db {demo_db} "}).stdout.decode().split()
    assert {s["handle"] for s in listed} | {"demo", "demo-http", "@1", "@2"} <= set(words)
    some = cli(env={**env, "COMP_WORDS": f"mcptap {command} --db {demo_db} demo-h"}).stdout.decode().split()
    assert some == ["demo-http"]


def test_a_wrong_choice_is_said_in_mcptaps_words(demo_db):
    done = cli("analyze", "--db", str(demo_db), "--format", "nope")
    assert done.returncode == 2 and b"'nope' is not one of" in done.stderr and b"Value error" not in done.stderr


@pytest.mark.parametrize("args, words", [
    (("--jobs", "0"), b"'--jobs': must be 1 or more"),
    (("--jobs", "two"), b"'--jobs': not a whole number"),
    (("--max-per-code", "-1"), b"'--max-per-code': must be 0 or more"),
])
def test_a_number_out_of_its_bounds_is_said_in_mcptaps_words(demo_db, args, words):
    done = cli("analyze", "--db", str(demo_db), *args)
    assert done.returncode == 2 and words in done.stderr and b"Input should" not in done.stderr


def test_every_usage_line_writes_its_arguments_alike():
    """SESSION when required, [SESSION] when not, ... when repeated (as git, click and record do):
    never typer's {SESSION} nor a doubled bracket."""
    from mcptap.cli import clidocs

    usages = [line for line in clidocs.markdown().splitlines() if re.match(r"(Usage: )?mcptap [a-z-]+ \[OPTIONS\]", line)]
    assert len(usages) >= 20
    assert [u for u in usages if "{" in u or "[[" in u] == []
    assert "mcptap diff [OPTIONS] SESSION_A SESSION_B" in usages and "mcptap import [OPTIONS] FILE..." in usages
    assert "mcptap export [OPTIONS] [SESSION]..." in usages and "mcptap show [OPTIONS] [SESSION]" in usages


def test_record_speaks_as_every_other_command():
    record = cli("record", "--help").stdout.decode()
    show = cli("show", "--help").stdout.decode()
    for text in (record, show):
        assert text.startswith("Usage: mcptap ") and "\nOptions:\n" in text and "Example:" in text
    assert "-h, --help" in record and "positional arguments" not in record


def test_the_command_list_gives_every_summary_whole():
    listing = cli("--help").stdout.decode()
    commands = listing[listing.index("\nCommands:"):]
    assert "..." not in commands
    for name in COMMANDS:
        assert re.search(rf"^  {re.escape(name)} ", listing, re.M), name


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_readable_metavars_not_python_types(command):
    if command == "record":
        return  # its own parser's help (analyzer/record.py)
    shown = cli(command, "--help").stdout.decode()
    assert not re.search(r"<(str|int|float|bool|list\[[a-z]+\])>|\bTEXT\b|\bINTEGER\b|\bFLOAT\b|\{[a-z_]+\}", shown), shown


# -- -, .gz and .zst ----------------------------------------------------------------------------

def test_export_to_dash_writes_stdout_and_no_file_named_dash(demo_db, tmp_path):
    result = cli("export", "--db", str(demo_db), "-o", "-", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == cli("export", "--db", str(demo_db)).stdout
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("ext", [".gz", ".zst"])
def test_export_compresses_by_extension_and_import_and_analyze_read_it_back(demo_db, tmp_path, ext):
    plain = cli("export", "--db", str(demo_db)).stdout
    packed = tmp_path / f"log.jsonl{ext}"
    assert cli("export", "--db", str(demo_db), "-o", str(packed)).returncode == 0
    assert packed.stat().st_mode & 0o777 == 0o600
    data = packed.read_bytes()
    assert data.startswith(b"\x1f\x8b" if ext == ".gz" else b"\x28\xb5\x2f\xfd")
    if ext == ".gz":
        assert gzip.decompress(data) == plain
    again = tmp_path / "again.db"
    assert cli("import", "--db", str(again), str(packed)).returncode == 0
    assert cli("export", "--db", str(again)).stdout == plain
    report = cli("analyze", str(packed), "--format", "jsonl", "--fail-on", "never")
    assert report.returncode == 0 and b"parse-error" in report.stdout


def test_import_and_analyze_read_a_frame_log_from_stdin(demo_db, tmp_path):
    plain = cli("export", "--db", str(demo_db)).stdout
    db = tmp_path / "stdin.db"
    assert cli("import", "--db", str(db), "-", input=plain).returncode == 0
    assert cli("export", "--db", str(db)).stdout == plain
    report = cli("analyze", "-", "--format", "jsonl", "--fail-on", "never", input=plain)
    assert report.returncode == 0 and b"stdout-noise" in report.stdout


def test_a_broken_compressed_file_is_one_line_naming_it(tmp_path):
    broken = tmp_path / "cut.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"session": "s", "ts": 1, "direction": "c2s", "raw": "{}"}\n' * 50)[:30])
    result = cli("import", "--db", str(tmp_path / "x.db"), str(broken))
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1
    assert result.stderr.startswith(b"mcptap: error: cannot read " + str(broken).encode())  # read as gzip, not sniffed
    assert b"/tmp/mcptap-" not in result.stderr


def test_a_zst_file_without_zstandard_is_one_line_naming_the_extra(tmp_path):
    packed = tmp_path / "log.jsonl.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd")
    blocked = ("import sys; sys.modules['zstandard'] = None; sys.modules['compression.zstd'] = None; "
               "sys.argv = ['mcptap', 'import', '--db', sys.argv[1], sys.argv[2]]; "
               "from mcptap.__main__ import main; main()")
    result = run([sys.executable, "-c", blocked, str(tmp_path / "x.db"), str(packed)])
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1 and b"mcptap[zstd]" in result.stderr


def test_replay_takes_a_compressed_frame_log_as_its_session(demo_db, tmp_path):
    log = tmp_path / "one.jsonl.gz"
    assert cli("export", "demo", "--db", str(demo_db), "-o", str(log)).returncode == 0
    result = cli("replay", str(log), "--command", f"{sys.executable} -m mcptap.demo.server")
    assert result.returncode == 0, result.stderr
    assert b"equal: 6 messages compared" in result.stdout


def test_replay_reads_its_log_from_stdin_and_serve_serves_a_log_file(demo_db, tmp_path):
    plain = cli("export", "demo", "--db", str(demo_db)).stdout
    replayed = cli("replay", "-", "--no-record", "--command", f"{sys.executable} -m mcptap.demo.server",
                   input=plain)
    assert replayed.returncode == 0, replayed.stderr
    log = tmp_path / "one.jsonl"
    log.write_bytes(plain)
    hello = json.loads(json.loads(plain.splitlines()[1])["raw"])
    served = cli("serve", str(log), input=json.dumps(hello).encode() + b"\n")
    assert served.returncode == 0 and json.loads(served.stdout.splitlines()[0])["id"] == hello["id"]


def test_serve_on_stdio_refuses_stdin_as_its_log_and_a_log_of_several_sessions_in_one_line(tmp_path):
    refused = cli("serve", "-")
    assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1
    several = cli("replay", str(CORPUS), "--command", "true")
    assert several.returncode == 2 and several.stderr.count(b"\n") == 1 and b"2 sessions" in several.stderr
