"""The tee's recording runs in a recorder process of its own (addons/stdio/recorder.py), fed
through a queue that overflows to disk: the wire never waits for the database, and when the
recorder goes away the session goes on and says so."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

from mcptap.addons.shipping.chunkqueue import MEMORY_LIMIT_BYTES
from mcptap.store import BUSY_TIMEOUT_S
from tests.conftest import frames, tee, tool, wait_for

LINE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 120 + b'"}}'


def recorder_pids(db) -> list[int]:
    """Recorder processes recording into `db`, found by their command lines."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{entry}/status", encoding="utf-8") as fh:
                if "\nState:\tZ" in fh.read():
                    continue
        except OSError:
            continue
        if b"mcptap.addons.stdio.recorder" in argv and str(db).encode() in argv:
            pids.append(int(entry))
    return pids


def stored(db) -> int:
    try:
        return sqlite3.connect(db).execute("SELECT count(*) FROM frames").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_a_flood_passes_in_full_while_the_database_is_locked_and_is_stored_after(tmp_path, db):
    count = 4 * MEMORY_LIMIT_BYTES // len(LINE)  # well past what the tee and its recorder hold in memory
    flood = tmp_path / "flood.jsonl"
    flood.write_bytes((LINE + b"\n") * count)
    locker = subprocess.Popen([sys.executable, tool("locker.py"), str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with locker:
        assert locker.stdout.readline() == "locked\n"
        began = time.monotonic()
        proc = subprocess.Popen(tee(db, sys.executable, tool("emit.py"), str(flood)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with proc:
            out = proc.stdout.read()  # to EOF, which comes with the server's, not with storing
            assert time.monotonic() - began < BUSY_TIMEOUT_S, "the wire waited for the database"
            assert out == flood.read_bytes()
            assert frames(db) == []
            locker.stdin.close()
            assert locker.wait(timeout=30) == 0
            assert proc.wait(timeout=120) == 0
            assert proc.stderr.read() == b""
    assert frames(db, "s2c") == [LINE] * count


def echo(proc, line: bytes) -> None:
    """Send a line through a tee in front of `cat` and see it come back."""
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == line + b"\n"


def test_a_recorder_process_that_dies_leaves_the_session_working_and_says_so_in_one_line(db):
    proc = subprocess.Popen(tee(db, "cat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with proc:
        echo(proc, b"before")
        (recorder,) = wait_for(lambda: recorder_pids(db), 30, "the recorder process")
        os.kill(recorder, signal.SIGKILL)
        wait_for(lambda: not recorder_pids(db), 30, "the recorder process to die")
        echo(proc, b"after")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        err = proc.stderr.read()
    assert err.count(b"\n") == 1 and b"recorder process" in err and b"Traceback" not in err


def test_killing_the_tee_lets_its_recorder_store_what_it_got_and_end(db):
    proc = subprocess.Popen(tee(db, "cat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with proc:
        echo(proc, b"one")
        wait_for(lambda: stored(db) == 2, 30, "both frames stored")
        (recorder,) = recorder_pids(db)
        proc.kill()
        proc.wait(timeout=30)
    wait_for(lambda: recorder not in recorder_pids(db), 30, "the recorder to end with the tee")
    row = sqlite3.connect(db).execute("SELECT ended_at IS NOT NULL, exit_status FROM sessions").fetchone()
    assert row == (1, None)  # closed at the last thing seen; the tee died before knowing a status
    assert frames(db) == [b"one", b"one"]
