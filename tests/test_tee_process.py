"""The tee as a process: exit status, signal forwarding, escalation, no orphans."""

import os
import select
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from addons.stdio_tee import DRAIN_AFTER_EXIT_S, TERM_GRACE_S
from conftest import alive, frames, run, tee, tool, wait_for


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
