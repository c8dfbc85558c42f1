"""Progress of the long commands (import, analyze, export, report, redact): counted in frames on a
terminal (a real pseudo-terminal on the command's stderr), nothing at all when stderr is piped."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

import pytest

from tests.conftest import PROCESS_TIMEOUT_S, copy_database, mcptap, run
from tests.support.sessions import handshake, note, ok, req, write_log

FRAMES = handshake() + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))] + [
    ("s2c", note("notifications/message", {"level": "info", "data": f"line {i}", "password": "hunter2"}))
    for i in range(45)]
N = len(FRAMES)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "incident.jsonl"
    write_log(path, FRAMES)
    return path


@pytest.fixture(scope="module")
def db_once(tmp_path_factory):
    folder = tmp_path_factory.mktemp("progress")
    log, path = folder / "incident.jsonl", folder / "p.db"
    write_log(log, FRAMES)
    assert run(mcptap("import", "--db", str(path), "--no-redact", str(log))).returncode == 0
    return path


@pytest.fixture
def db(tmp_path, log, db_once):
    """`log` imported (each test its own copy of the module's import)."""
    return copy_database(db_once, tmp_path / "p.db")


def on_a_terminal(argv: list[str], stdout_path) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal (120 columns) and stdout to a file: (exit status,
    what the terminal got, escape sequences removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=slave,
                                env={**os.environ, "TERM": "xterm-256color"})
    os.close(slave)
    chunks, deadline = [], time.monotonic() + PROCESS_TIMEOUT_S
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                proc.kill()
                raise AssertionError(f"{argv} did not end within {PROCESS_TIMEOUT_S}s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
        status = proc.wait(timeout=PROCESS_TIMEOUT_S)
    finally:
        os.close(master)
    return status, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


COMMANDS = {
    "analyze": (["analyze", "--format", "json"], ["analyzing", f"{N}/{N} frames"]),
    "export": (["export", "-o", "{out}"], ["exporting", f"{N}/{N} frames"]),
    "export otlp": (["export", "--format", "otlp", "-o", "{out}"], ["exporting", f"{N}/{N} frames"]),
    "report": (["report", "-o", "{out}"], ["analyzing", "writing the report", f"{N}/{N} frames"]),
    "redact": (["redact"], ["redacting", f"{N}/{N} frames"]),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_long_command_on_a_terminal_counts_its_progress_in_frames(db, tmp_path, command):
    args, expected = COMMANDS[command]
    argv = mcptap(args[0], "--db", str(db), *[a.format(out=tmp_path / "out") for a in args[1:]])
    status, seen = on_a_terminal(argv, tmp_path / "stdout")
    assert status in (0, 1), seen
    assert all(text in seen for text in expected), seen
    assert "Traceback" not in seen and " kB" not in seen and "MB" not in seen


def test_import_on_a_terminal_counts_the_frames_read_and_the_bytes_of_the_file(tmp_path, log):
    status, seen = on_a_terminal(mcptap("import", "--db", str(tmp_path / "i.db"), str(log)), tmp_path / "stdout")
    assert status == 0, seen
    size = os.path.getsize(log) / 1e6
    assert "importing incident.jsonl" in seen and f"{N} frames" in seen and f"{size:,.1f}/{size:,.1f} MB" in seen


@pytest.mark.parametrize("command", sorted(COMMANDS) + ["import"])
def test_piped_a_long_command_writes_no_progress_at_all(db, tmp_path, log, command):
    if command == "import":
        argv = mcptap("import", "--db", str(tmp_path / "i.db"), str(log))
    else:
        args, _ = COMMANDS[command]
        argv = mcptap(args[0], "--db", str(db), *[a.format(out=tmp_path / "out") for a in args[1:]])
    result = run(argv)
    assert result.returncode in (0, 1) and result.stderr == b""


def test_progress_on_the_terminal_leaves_what_goes_to_stdout_untouched(db, tmp_path):
    status, seen = on_a_terminal(mcptap("export", "--db", str(db)), tmp_path / "stdout")
    assert status == 0 and f"{N}/{N} frames" in seen
    assert run(mcptap("export", "--db", str(db), "-o", str(tmp_path / "file"))).returncode == 0
    assert (tmp_path / "stdout").read_bytes() == (tmp_path / "file").read_bytes()


def test_a_warning_during_import_is_written_whole_beside_the_progress(tmp_path, log):
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(log.read_bytes() + b'{"session":"s","ts":2,"dir')
    status, seen = on_a_terminal(mcptap("import", "--db", str(tmp_path / "i.db"), str(cut)), tmp_path / "stdout")
    assert status == 0 and "mcptap: warning: " in seen and "skipped the last line" in seen, seen
