"""The tee as a process: exit status, signal forwarding, escalation, no orphans; its command line."""

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from mcptap.addons.stdio.tee import DRAIN_AFTER_EXIT_S, TERM_GRACE_S
from tests.conftest import alive, frames, mcptap, run, tee, tool, wait_for


def start(db, *argv):
    return subprocess.Popen(tee(db, *argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_line(proc, timeout=30.0) -> bytes:
    """One line of the process's stdout, waiting at most `timeout` seconds."""
    buf = b""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while not buf.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"no line within {timeout}s (got {buf!r})")
        chunk = os.read(fd, 1)
        if not chunk:
            break
        buf += chunk
    return buf


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_the_tee_exits_with_the_servers_exit_status(db, code):
    result = run(tee(db, sys.executable, "-c", f"import sys; sys.exit({code})"))
    assert result.returncode == code
    assert sqlite3.connect(db).execute("SELECT exit_status FROM sessions").fetchone() == (code,)


def test_a_server_killed_by_a_signal_gives_128_plus_the_signal(db):
    result = run(tee(db, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert result.returncode == 128 + signal.SIGKILL


def test_a_command_that_does_not_exist_is_one_line_and_127(db):
    result = run(tee(db, "/nonexistent/server"))
    assert result.returncode == 127
    assert result.stderr.count(b"\n") == 1 and b"Traceback" not in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_are_forwarded_to_the_server(db, sig):
    with start(db, sys.executable, tool("signals.py"), "report") as proc:
        assert read_line(proc).startswith(b"ready")
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
        assert out == f"got {signal.Signals(sig).name}\n".encode()
        assert proc.returncode == 0
        assert frames(db, "s2c")[-1] == f"got {signal.Signals(sig).name}".encode()


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period(db):
    with start(db, sys.executable, tool("signals.py"), "ignore-term") as proc:
        child = int(read_line(proc).split()[1])
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=TERM_GRACE_S + DRAIN_AFTER_EXIT_S + 20)
        took = time.monotonic() - began
        assert proc.returncode == 128 + signal.SIGKILL
        assert TERM_GRACE_S - 0.5 <= took <= TERM_GRACE_S + 15
        assert not alive(child)


def test_closing_stdin_closes_the_servers_stdin_and_the_tee_ends_with_it(db):
    with start(db, sys.executable, tool("signals.py"), "hold") as proc:
        assert read_line(proc).startswith(b"ready")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


def test_killing_the_tee_with_sigkill_leaves_no_orphan_and_keeps_committed_frames(db):
    with start(db, sys.executable, tool("signals.py"), "hold") as proc:
        child = int(read_line(proc).split()[1])
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        wait_for(lambda: os.path.exists(db) and _count(db) == 2, 10, "both frames committed")
        proc.kill()
        proc.wait(timeout=10)
        wait_for(lambda: not alive(child), 10, "the server to die with the tee")
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert _count(db) == 2
        # the next recording opens the same file
        assert run(tee(db, "true")).returncode == 0
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (2,)


def test_a_server_whose_children_hold_its_output_open_does_not_hang_the_tee(db):
    script = "import subprocess, sys; subprocess.Popen(['sleep', '300']); print('bye', flush=True)"
    began = time.monotonic()
    result = run(tee(db, sys.executable, "-c", script), timeout=DRAIN_AFTER_EXIT_S + 20)
    assert result.returncode == 0
    assert result.stdout == b"bye\n"
    assert time.monotonic() - began < DRAIN_AFTER_EXIT_S + 15


def _count(db) -> int:
    try:
        conn = sqlite3.connect(db)
        return conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


# -- the command line of `mcptap record` (analyzer/record.py: its own parser, started light) --------

HEAVY = ("typer", "click", "pydantic", "sqlite_utils", "sqlite3", "mcptap.cli", "mcptap.redaction", "mcptap.analysis.session",
         "mcptap.store", "mcptap.store.writer")


def imported_by(argv: list[str], **kw) -> set[str]:
    result = run([sys.executable, "-X", "importtime", *argv[1:]], **kw)
    return {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if line.startswith("import time:")}


def test_record_starts_without_typer_the_analysis_or_sqlite_in_the_tee_process(db):
    modules = imported_by(tee(db, sys.executable, "-c", "pass"))
    assert "mcptap.addons.stdio.tee" in modules
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    assert "argparse" not in modules  # a host's command line is read without it


@pytest.mark.parametrize("argv", [
    ["--db", "x", "--", "cmd", "a"], ["--db=x", "--name", "n", "cmd", "--db", "y"], ["--no-redact", "--", "c"],
    ["--redact-key", "k", "--redact-key=j", "--", "c"], ["--max-frame", "1M", "c"], ["--", "--", "x"],
    ["--db", "x", "--", "-c"], ["--no-redact", "--no-redact", "c", "--help"],
])
def test_a_hosts_record_line_read_without_argparse_reads_as_argparse_reads_it(argv):
    from mcptap import record

    at = next(i for i, word in enumerate(argv) if word == "--" or not word.startswith("-") and
              not (i and argv[i - 1] in record._VALUES))
    expected = vars(record.parser().parse_args([w for w in argv[:at] if w == "--no-redact"] + argv[at:]))
    for option, value in zip(argv[:at], argv[1:at + 1]):
        if option in record._VALUES and not option.startswith("--no"):
            key = record._VALUES[option]
            expected[key] = expected[key] + [value] if isinstance(expected[key], list) else value
    for word in argv[:at]:
        name, eq, value = word.partition("=")
        if eq and name in record._VALUES:
            key = record._VALUES[name]
            expected[key] = expected[key] + [value] if isinstance(expected[key], list) else value
    assert vars(record.parse(argv)) == expected


@pytest.mark.parametrize("args, said", [
    (["--max-frame", "12Q", "--", "true"], b"--max-frame"),
    (["--redact-path", "$[", "--", "true"], b"--redact-path"),
    (["--no-such-option", "--", "true"], b"--no-such-option"),
    ([], b"no server command"),
])
def test_bad_record_options_are_one_line_and_exit_2_and_start_no_server(tmp_path, args, said):
    db = tmp_path / "r.db"
    result = run(mcptap("record", "--db", str(db), *args))
    assert result.returncode == 2 and result.stderr.startswith(b"mcptap: error: "), result.stderr
    assert result.stderr.count(b"\n") == 1 and said in result.stderr
    assert not db.exists()


def test_the_servers_own_options_after_the_separator_reach_it_even_named_like_records(db):
    argv = ["--db", "x", "--name", "y", "-h", "--help", "--max-frame", "1"]
    result = run(mcptap("record", "--db", str(db), "--", sys.executable, "-c",
                        "import json, sys; print(json.dumps(sys.argv[1:]))", *argv))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == json.dumps(argv).encode()


def test_record_takes_the_database_from_mcptap_db_and_the_label_from_name(tmp_path):
    db = tmp_path / "env.db"
    result = run(mcptap("record", "--name", "labelled", "--", sys.executable, "-c", "print('{}')"),
                 env={**os.environ, "MCPTAP_DB": str(db)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sqlite3.connect(db).execute("SELECT label FROM sessions").fetchall() == [("labelled",)]


def test_record_help_has_every_option_and_an_example_also_through_the_typer_app():
    direct = run(mcptap("record", "--help"))
    through_app = run([sys.executable, "-c", "import sys; from mcptap.cli import app; sys.argv[0] = 'mcptap'; "
                       "app(prog_name='mcptap')", "record", "--help"])
    assert direct.returncode == through_app.returncode == 0
    assert direct.stdout == through_app.stdout
    for option in (b"--db", b"--name", b"--no-redact", b"--redact-key", b"--redact-path", b"--max-frame",
                   b"Example:"):
        assert option in direct.stdout


def test_the_recorder_process_starts_once_the_server_answered_or_at_the_end_and_gets_the_session_first(
        monkeypatch, tmp_path):
    """The shipper starts the recorder process (off the server's start-up) when the server's first
    output has passed, or when the session ends before any; the session record goes first."""
    import threading

    from mcptap.addons.shipping.chunkqueue import ChunkQueue
    from mcptap.addons.shipping.chunkwire import SESSION, chunk_header, json_record
    from mcptap.addons.stdio import tee as tee_module

    monkeypatch.setattr(tee_module, "RECORDER_AFTER_S", 600.0)
    for answered in (True, False):
        started: list[subprocess.Popen] = []

        def start_recorder():
            proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            started.append(proc)
            return proc

        ready, queue = threading.Event(), ChunkQueue((str(tmp_path), None))
        shipper = tee_module._Shipper(queue, start_recorder, {"id": "s1"}, lambda message: None, ready)
        shipper.start()
        queue.put("c2s", 1.0, b"{}\n")
        assert started == []
        if answered:
            ready.set()
            wait_for(lambda: started, 30, "the recorder process")
        shipper.finish({"exit_status": 0})
        with started[0].stdout as fh:
            out = fh.read()
        assert out.startswith(json_record(SESSION, {"id": "s1"}))
        assert chunk_header("c2s", 1.0, 3) + b"{}\n" in out
        queue.close()
