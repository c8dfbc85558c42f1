"""Faults during capture, with real processes and real SQLite files: the tee killed mid-flood, the
database locked for 10 s or full, servers that close their stdout, exit under the host's writes
or ignore SIGTERM, 100 sessions at once, a 100 MiB frame, and behind the proxy an upstream that
refuses, resets a stream mid-event or answers garbage. Each test fails if a frame goes missing,
a traceback appears, or a run does not end within its bound; every wait is on a condition."""

from __future__ import annotations

import base64
import contextlib
import glob
import hashlib
import http.client
import json
import os
import random
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcptap.addons.stdio.tee import DRAIN_AFTER_EXIT_S, TERM_GRACE_S
from tests.conftest import alive, frames, mcptap, run, tee, tool, wait_for
from tests.support.http_helpers import accepting, free_port, mcptap_proxy
from tests.support.rawhttp import RawServer, answer, read_request, stream_head
from tests.support.rawhttp import chunk as send_chunk

END_S = 60  # the most any tee here may take to end once its session is over


# -- bounded process plumbing ----------------------------------------------------------------

class Reader:
    """Bounded reads of a pipe: a line, or all of it to EOF; never waits past a deadline."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.buf = bytearray()
        self.eof = False

    def _fill(self, deadline: float, what: str) -> None:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"timed out waiting for {what} (got {bytes(self.buf[-200:])!r})")
        chunk = os.read(self.fd, 1 << 16)
        self.eof = not chunk
        self.buf += chunk

    def line(self, timeout: float = 30) -> bytes:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf and not self.eof:
            self._fill(deadline, "a line")
        end = self.buf.find(b"\n") + 1 or len(self.buf)
        out = bytes(self.buf[:end])
        del self.buf[:end]
        return out

    def poll(self, timeout: float) -> bool:
        """Take what has come within `timeout` seconds, if anything has; False if nothing did."""
        if self.eof or not select.select([self.fd], [], [], timeout)[0]:
            return False
        self._fill(time.monotonic(), "data")
        return True

    def rest(self, timeout: float = 30) -> bytes:
        deadline = time.monotonic() + timeout
        while not self.eof:
            self._fill(deadline, "EOF")
        out = bytes(self.buf)
        self.buf.clear()
        return out


@contextlib.contextmanager
def started(argv: list[str], **kw):
    """A process with pipes on stdin, stdout and stderr unless told otherwise; killed if the test
    leaves it running, its pipes closed either way."""
    for stream in ("stdin", "stdout", "stderr"):
        kw.setdefault(stream, subprocess.PIPE)
    proc = subprocess.Popen(argv, **kw)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def echo(proc, reader: Reader, line: bytes) -> None:
    """A line through a tee in front of `cat`, seen coming back."""
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    assert reader.line() == line + b"\n"


def recorder_pids(db) -> list[int]:
    """The tee recorder processes recording into `db`, found by their command lines."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"mcptap.addons.stdio.recorder" in argv and str(db).encode() in argv and alive(int(entry)):
            pids.append(int(entry))
    return pids


def query(db, sql: str, args: tuple = ()) -> list[tuple]:
    """Rows from the database, or [] while it or its tables do not exist yet."""
    if not os.path.exists(db):
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def stored(db) -> int:
    rows = query(db, "SELECT count(*) FROM frames")
    return rows[0][0] if rows else 0


def integrity(db) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def spool_files(*folders) -> list[str]:
    return sorted(p for folder in folders for p in glob.glob(os.path.join(folder, "*.spool.jsonl")))


def open_or_spooled(db, folder) -> set[str]:
    """The ids of the sessions open in the database or spooled beside it (DB.<id>.spool.jsonl)."""
    opened = {sid for (sid,) in query(db, "SELECT id FROM sessions WHERE ended_at IS NULL") or []}
    return opened | {os.path.basename(p)[:-len(".spool.jsonl")].rsplit(".", 1)[1] for p in spool_files(folder)}


def assert_quiet_or_one_warning(stderr: bytes) -> None:
    """Nothing, or one `mcptap: warning:` line; never a traceback."""
    text = stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    assert text == "" or (text.count("\n") == 1 and text.startswith("mcptap: warning:")), text


def import_spools(db, spools: list[str]) -> None:
    for spool in spools:
        imported = run(mcptap("import", "--db", str(db), spool))
        assert imported.returncode == 0, imported.stderr.decode(errors="replace")
        assert b"Traceback" not in imported.stderr


def assert_what_passed(db, direction: str, line_at) -> int:
    """The frames of `direction` are the host's or server's first lines (`line_at(i)`, the i-th
    sent), in order, with no gap; a last one cut short is kept, marked incomplete. Returns how many
    frames there are (read row by row: there may be millions)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT CAST(raw AS BLOB), incomplete FROM frames WHERE direction = ? ORDER BY seq",
                            (direction,))
        count, cut = 0, False
        for raw, incomplete in rows:
            assert not cut, "a frame after one cut short"
            if incomplete:
                cut = True
                assert line_at(count).startswith(raw), (count, raw[:200])
            else:
                assert raw == line_at(count), (count, raw[:200])
            count += 1
        return count
    finally:
        conn.close()


def message(i: int, pad: int = 0) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"%s"}}' % (i, b"x" * pad)


# -- 1. the tee killed with SIGKILL mid-session ------------------------------------------------

FLOOD_LINES = 60_000


@pytest.mark.parametrize("victims", ["the tee", "the tee and its recorder"])
def test_a_tee_killed_with_sigkill_mid_flood_keeps_every_committed_frame_and_the_file_opens_again(tmp_path, db,
                                                                                                  victims):
    lines = [message(i, 200) for i in range(FLOOD_LINES)]
    flood = tmp_path / "flood.jsonl"
    flood.write_bytes(b"\n".join(lines) + b"\n")
    # the server floods its stdout, then stays, reading the host's stdin
    server = ["sh", "-c", 'cat "$0" && exec cat >/dev/null', str(flood)]
    with started(tee(db, *server), stdout=subprocess.DEVNULL) as proc:
        wait_for(lambda: stored(db) >= FLOOD_LINES // 10, 60, "a tenth of the flood stored")
        recorders = recorder_pids(db)
        assert len(recorders) == 1
        committed = stored(db)
        if victims == "the tee and its recorder":
            os.kill(recorders[0], signal.SIGKILL)
        proc.kill()
        assert proc.wait(timeout=10) == -signal.SIGKILL
        wait_for(lambda: not recorder_pids(db), END_S, "the recorder to end")  # it stores what reached it
        assert Reader(proc.stderr).rest() == b""
    assert committed < FLOOD_LINES, "the flood was stored before the kill: nothing was killed mid-session"
    assert integrity(db) == "ok"
    # every frame committed before the kill is there
    assert assert_what_passed(db, "s2c", lines.__getitem__) >= committed
    # the next recording opens the same file and records
    again = run(tee(db, "cat"), input=b"after\n", timeout=END_S)
    assert (again.returncode, again.stdout, again.stderr) == (0, b"after\n", b"")
    assert query(db, "SELECT direction, CAST(raw AS BLOB) FROM frames WHERE session_id = "
                     "(SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1) ORDER BY seq") == [
        ("c2s", b"after"), ("s2c", b"after")]
    assert integrity(db) == "ok"


# -- 2. the database locked by another process for 10 s ----------------------------------------

LOCK_S = 10.0


@pytest.mark.serial
def test_a_database_locked_for_ten_seconds_mid_session_loses_no_frame(tmp_path, db):
    sent: list[bytes] = []
    with started(tee(db, "cat")) as proc:
        out, err = Reader(proc.stdout), Reader(proc.stderr)
        for i in range(5):
            sent.append(message(i))
            echo(proc, out, sent[-1])
        wait_for(lambda: stored(db) == 2 * len(sent), 30, "the frames before the lock stored")
        with started([sys.executable, tool("locker.py"), str(db)], stdout=subprocess.PIPE) as locker:
            assert Reader(locker.stdout).line() == b"locked\n"
            locked_at = time.monotonic()
            while time.monotonic() - locked_at < LOCK_S:  # the session goes on under the lock ...
                sent.append(message(len(sent), 100))
                echo(proc, out, sent[-1])
                err.poll(0.05)  # ... a line at a time, taking the tee's warning when it comes
            locker.stdin.close()
            assert locker.wait(timeout=30) == 0
        for _ in range(5):
            sent.append(message(len(sent)))
            echo(proc, out, sent[-1])
        proc.stdin.close()
        assert proc.wait(timeout=END_S) == 0
        err = err.rest()
    assert_quiet_or_one_warning(err)
    spools = spool_files(tmp_path)
    assert len(spools) == int(err != b""), err
    assert all(s.encode() in err for s in spools)
    import_spools(db, spools)
    assert frames(db, "c2s") == sent
    assert frames(db, "s2c") == sent
    assert query(db, "SELECT exit_status, ended_at IS NOT NULL FROM sessions") == [(0, 1)]


# -- 3. the disk filling up --------------------------------------------------------------------

PAGE_LIMIT = '''"""Test fault (written by tests/capture/test_faults.py): every SQLite connection of this process may
grow its database to at most $MCPTAP_TEST_MAX_PAGES pages, as if the disk were full there."""
import os
import sqlite3

_connect = sqlite3.connect


def _limited(*args, **kwargs):
    conn = _connect(*args, **kwargs)
    conn.execute("PRAGMA max_page_count = %d" % int(os.environ["MCPTAP_TEST_MAX_PAGES"]))
    return conn


sqlite3.connect = _limited
'''


def test_a_database_that_fills_up_mid_session_spools_the_rest_with_one_warning_and_import_brings_it_back(tmp_path, db):
    first = run(tee(db, "true"))  # the file exists, with its schema, and can grow by a few pages only
    assert first.returncode == 0
    pages = query(db, "PRAGMA page_count")[0][0]
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PAGE_LIMIT, encoding="utf-8")
    env = {**os.environ, "MCPTAP_TEST_MAX_PAGES": str(pages + 6),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))}
    sent = [message(i, 1000) for i in range(40)]
    with started(tee(db, "cat"), env=env) as proc:
        out = Reader(proc.stdout)
        for i, line in enumerate(sent):
            echo(proc, out, line)
            # one batch per line: the database fills up part-way through the session
            wait_for(lambda: stored(db) == 2 * (i + 1) or spool_files(tmp_path), 30, "the line stored or spooled")
        proc.stdin.close()
        assert proc.wait(timeout=END_S) == 0
        err = Reader(proc.stderr).rest()
    assert_quiet_or_one_warning(err)
    spools = spool_files(tmp_path)
    assert len(spools) == 1 and spools[0].encode() in err, err
    assert 0 < stored(db) < 2 * len(sent), "the database did not fill up part-way through the session"
    import_spools(db, spools)
    assert integrity(db) == "ok"
    assert frames(db, "c2s") == sent and frames(db, "s2c") == sent
    assert query(db, "SELECT exit_status FROM sessions ORDER BY started_at") == [(0,), (0,)]


def _can_mount_a_private_tmpfs(folder: Path) -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = run(["unshare", "--mount", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "size=64k",
                 "tmpfs", str(folder)], timeout=30)
    return probe.returncode == 0


def test_a_full_disk_under_the_database_spools_to_the_temp_folder_and_loses_no_frame(tmp_path):
    disk, out, temp = tmp_path / "disk", tmp_path / "out", tmp_path / "tmp"
    for folder in (disk, out, temp):
        folder.mkdir()
    if not _can_mount_a_private_tmpfs(disk):
        pytest.skip("needs root and mount namespaces (unshare) for a small private tmpfs")
    # a 256 KiB filesystem, private to the tee's mount namespace; its files are copied out at the end
    script = ('mount -t tmpfs -o size=256k tmpfs "$DISK" || exit 99; "$@"; status=$?; '
              'cp -p "$DISK"/* "$OUT"/; exit $status')
    env = {**os.environ, "DISK": str(disk), "OUT": str(out), "TMPDIR": str(temp)}
    sent = [message(i, 1000) for i in range(300)]
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            *tee(disk / "rec.db", "cat")]
    with started(argv, env=env) as proc:
        reader = Reader(proc.stdout)
        for line in sent:
            echo(proc, reader, line)
        proc.stdin.close()
        assert proc.wait(timeout=END_S) == 0
        err = Reader(proc.stderr).rest()
    assert_quiet_or_one_warning(err)
    db = out / "rec.db"
    import_spools(db, [s for s in spool_files(out, temp) if os.path.getsize(s)])
    assert frames(db, "c2s") == sent and frames(db, "s2c") == sent


# -- 4. servers that misbehave ------------------------------------------------------------------

CLOSES_STDOUT = r"""
import os, sys
os.write(1, b'{"jsonrpc":"2.0","id":0,"result":{}}\n')
os.close(1)
for line in sys.stdin.buffer:
    os.write(2, b"got " + line)
"""


def test_a_server_that_closes_its_stdout_early_ends_the_hosts_stdout_and_its_session_goes_on(db):
    sent = [message(i) for i in range(3)]
    with started(tee(db, sys.executable, "-c", CLOSES_STDOUT)) as proc:
        assert Reader(proc.stdout).rest() == b'{"jsonrpc":"2.0","id":0,"result":{}}\n'  # EOF while it runs
        err = Reader(proc.stderr)
        for line in sent:
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            assert err.line() == b"got " + line + b"\n"  # the server still reads the host
        proc.stdin.close()
        assert proc.wait(timeout=END_S) == 0
        assert err.rest() == b""  # no word from the tee
    assert frames(db, "s2c") == [b'{"jsonrpc":"2.0","id":0,"result":{}}']
    assert frames(db, "c2s") == sent
    assert [r for (r,) in query(db, "SELECT CAST(raw AS BLOB) FROM stderr_lines ORDER BY seq")] == [
        b"got " + line for line in sent]


EXITS_MID_REQUEST = r"""
import os, sys
os.read(0, 4096)  # the start of the host's request
os.write(1, b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bye"}}\n')
sys.exit(3)
"""
BYE = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bye"}}'


def test_a_server_that_exits_while_the_host_still_writes_ends_the_tee_with_its_status_and_records_what_passed(db):
    request = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"' + b"y" * (16 << 20) + b'"}}\n'

    def write_the_request(fd: int) -> None:
        view = memoryview(request)
        with contextlib.suppress(BrokenPipeError):  # the tee may go away first: what a host sees then
            while view:
                view = view[os.write(fd, view[:1 << 16]):]

    with started(tee(db, sys.executable, "-c", EXITS_MID_REQUEST)) as proc:
        writer = threading.Thread(target=write_the_request, args=(proc.stdin.fileno(),), daemon=True)
        writer.start()
        assert Reader(proc.stdout).rest(timeout=END_S) == BYE + b"\n"
        assert proc.wait(timeout=END_S) == 3
        writer.join(30)
        assert not writer.is_alive()
        err = Reader(proc.stderr).rest()
    assert err == b"", err  # no traceback, and nothing is wrong
    assert frames(db, "s2c") == [BYE]
    # the request as far as it passed the tee: at least what the server read; whole, or cut short and so marked
    ((raw, incomplete),) = query(db, "SELECT CAST(raw AS BLOB), incomplete FROM frames WHERE direction = 'c2s'")
    assert len(raw) >= 4096
    assert raw + b"\n" == request if not incomplete else request.startswith(raw)
    assert query(db, "SELECT exit_status FROM sessions") == [(3,)]


READS_THEN_EXITS = r"""
import os, sys
left = int(sys.argv[1])
while left > 0:
    left -= len(os.read(0, 1 << 16))
os.write(1, b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"bye"}}\n')
sys.exit(3)
"""


def test_a_server_that_exits_under_a_flood_from_the_host_ends_the_tee_while_the_host_still_writes(db):
    block = b"".join(message(i) + b"\n" for i in range(16_000))  # ~0.6 MiB of short requests
    host = {"blocks": 0, "broken": False}
    stop = threading.Event()

    def flood(fd: int) -> None:
        try:
            while not stop.is_set() and host["blocks"] < 400:  # ~250 MiB at most
                view = memoryview(block)
                while view:
                    view = view[os.write(fd, view):]
                host["blocks"] += 1
        except BrokenPipeError:
            host["broken"] = True

    with started(tee(db, sys.executable, "-c", READS_THEN_EXITS, str(16 << 20))) as proc:
        recorder = wait_for(lambda: recorder_pids(db), 30, "the recorder process")[0]
        wait_for(lambda: stored(db) == 0 and query(db, "SELECT count(*) FROM sessions") == [(1,)], 30,
                 "the session row stored")
        os.kill(recorder, signal.SIGSTOP)  # a recorder far behind: what passed waits in the tee's queue
        writer = threading.Thread(target=flood, args=(proc.stdin.fileno(),), daemon=True)
        try:
            writer.start()
            assert Reader(proc.stdout).rest(timeout=END_S) == BYE + b"\n"  # the server has exited
            os.kill(recorder, signal.SIGCONT)
            began = time.monotonic()
            assert proc.wait(timeout=10) == 3  # the queue stored, the tee ends: the host's pipe breaks
            took = time.monotonic() - began
        finally:
            stop.set()
            writer.join(30)
            with contextlib.suppress(ProcessLookupError):
                os.kill(recorder, signal.SIGCONT)
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            with contextlib.suppress(ProcessLookupError):
                os.kill(recorder, signal.SIGKILL)
        err = Reader(proc.stderr).rest()
    assert host["broken"] and took < 10
    assert err == b"", err
    assert assert_what_passed(db, "c2s", lambda i: message(i % 16_000)) > 0


IGNORES_SIGTERM = r"""
import signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.flush()
"""


@pytest.mark.serial
def test_a_server_that_ignores_sigterm_keeps_answering_in_the_grace_period_and_every_frame_is_recorded(db):
    with started(tee(db, sys.executable, "-c", IGNORES_SIGTERM)) as proc:
        out = Reader(proc.stdout)
        echo(proc, out, b"before")
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        echo(proc, out, b"during the grace period")
        assert out.rest(timeout=TERM_GRACE_S + DRAIN_AFTER_EXIT_S + 20) == b""
        assert proc.wait(timeout=30) == 128 + signal.SIGKILL
        assert time.monotonic() - began < TERM_GRACE_S + 15
        assert Reader(proc.stderr).rest() == b""
    assert frames(db, "c2s") == frames(db, "s2c") == [b"before", b"during the grace period"]
    assert query(db, "SELECT exit_status, ended_at IS NOT NULL FROM sessions") == [(128 + signal.SIGKILL, 1)]


# -- 5. 100 sessions into one file at once -----------------------------------------------------

TEES = 100
TEE_LINES = 40
MANY_S = 180  # for all 100 to start, record and end, on 2 cores (about 30 s when nothing else runs)


@pytest.mark.serial
def test_a_hundred_tees_recording_into_one_file_at_once_keep_every_frame(tmp_path, db):
    data = b"".join(message(i) + b"\n" for i in range(TEE_LINES))
    deadline = time.monotonic() + MANY_S
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(started(tee(db, "cat"), stdout=subprocess.DEVNULL)) for _ in range(TEES)]
        for proc in procs:
            proc.stdin.write(data)
            proc.stdin.flush()
        # all 100 sessions open at once: in the database, or in a spool (a recorder the database kept
        # locked past its busy timeout spools from there on: its session may be in both, counted once)
        wait_for(lambda: len(open_or_spooled(db, tmp_path)) == TEES, deadline - time.monotonic(), "100 sessions open",
                 interval=0.25)
        assert all(proc.poll() is None for proc in procs)
        for proc in procs:
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(timeout=max(0.1, deadline - time.monotonic())) == 0
        errors = [Reader(proc.stderr).rest() for proc in procs]
    for err in errors:
        assert_quiet_or_one_warning(err)
    spools = spool_files(tmp_path)
    assert len(spools) == sum(1 for err in errors if err)
    import_spools(db, spools)
    expected = [message(i) for i in range(TEE_LINES)]
    conn = sqlite3.connect(db)
    try:
        sessions = [sid for (sid,) in conn.execute("SELECT id FROM sessions WHERE ended_at IS NOT NULL "
                                                   "AND exit_status = 0")]
        assert len(sessions) == TEES
        for sid in sessions:
            rows = conn.execute("SELECT seq, direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? "
                                "ORDER BY seq", (sid,)).fetchall()
            assert [seq for seq, _, _ in rows] == list(range(1, 2 * TEE_LINES + 1))
            assert [raw for _, d, raw in rows if d == "c2s"] == expected
            assert [raw for _, d, raw in rows if d == "s2c"] == expected
    finally:
        conn.close()


# -- 6. a 100 MiB frame --------------------------------------------------------------------------

BIG_MIB = 100


@pytest.mark.serial
def test_a_100_mib_line_passes_the_tee_and_is_stored_byte_exact_both_ways(db):
    block = base64.b64encode(random.Random(7).randbytes(3 << 18))  # 1 MiB, no newline
    head, tail = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"', b'"}}'

    def line_parts():
        yield head
        for _ in range(BIG_MIB):
            yield block
        yield tail

    want = hashlib.sha256()
    for part in line_parts():
        want.update(part)
    size = len(head) + BIG_MIB * len(block) + len(tail)
    wire = want.copy()
    wire.update(b"\nafter\n")

    def host(stdin) -> None:
        for part in line_parts():
            stdin.write(part)
        stdin.write(b"\nafter\n")
        stdin.close()

    with started(tee(db, "cat")) as proc:
        writer = threading.Thread(target=host, args=(proc.stdin,), daemon=True)
        writer.start()
        seen, fd = hashlib.sha256(), proc.stdout.fileno()
        deadline = time.monotonic() + 60
        while True:
            assert select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0], "the line stopped passing"
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            seen.update(chunk)
        writer.join(30)
        assert not writer.is_alive()
        assert seen.hexdigest() == wire.hexdigest()  # passed byte-exact
        assert proc.wait(timeout=END_S) == 0
        assert Reader(proc.stderr).rest() == b""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT rowid, direction, size, incomplete FROM frames ORDER BY seq").fetchall()
        assert sorted((d, s, i) for _, d, s, i in rows) == [("c2s", 5, 0), ("c2s", size, 0), ("s2c", 5, 0),
                                                            ("s2c", size, 0)]
        for rowid, _, length, _ in rows:
            if length != size:
                continue
            got = hashlib.sha256()
            with conn.blobopen("frames", "raw", rowid, readonly=True) as blob:  # streamed, not loaded
                while piece := blob.read(1 << 20):
                    got.update(piece)
            assert got.hexdigest() == want.hexdigest()  # stored byte-exact
    finally:
        conn.close()


# -- 7. the proxy in front of an upstream that fails -------------------------------------------

PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
PONG = b'{"jsonrpc":"2.0","id":%d,"result":{}}'
EVENT_ONE = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'
EVENT_CUT = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progre'
NOT_HTTP = b"\x16\x03\x01\x00\xff garbage, not HTTP \xff\xfe\r\n\r\n"
NOT_JSON = b"<html><body>502 from a load balancer, not JSON</body></html>"


class RawUpstream(RawServer):
    """An HTTP/1.1 server on raw sockets, so that it can misbehave: each connection takes one
    request and answers as the JSON-RPC method in its body asks (`ping` properly)."""

    def __init__(self, port: int = 0):
        self.reset = threading.Event()  # set by the test: now reset the stream held open
        super().__init__(port)

    def serve(self, conn: socket.socket) -> None:
        request = read_request(conn)
        if request is not None:
            rpc = json.loads(request.body)
            getattr(self, "_" + rpc["method"].replace("/", "_"))(conn, rpc.get("id"))

    @staticmethod
    def _answer(conn: socket.socket, status: str, ctype: str, body: bytes) -> None:
        answer(conn, body, status=status.encode(), ctype=ctype.encode())

    def _ping(self, conn, rid) -> None:
        self._answer(conn, "200 OK", "application/json", PONG % rid)

    def _fault_reset_mid_event(self, conn, rid) -> None:
        stream_head(conn)
        for data in (b"event: message\ndata: " + EVENT_ONE + b"\n\n", b"event: message\ndata: " + EVENT_CUT):
            send_chunk(conn, data)
        assert self.reset.wait(30), "the test never asked for the reset"
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close: RST

    def _fault_not_http(self, conn, rid) -> None:
        conn.sendall(NOT_HTTP)

    def _fault_not_json(self, conn, rid) -> None:
        self._answer(conn, "200 OK", "application/json", NOT_JSON)


@contextlib.contextmanager
def raw_upstream(port: int = 0):
    upstream = RawUpstream(port)
    try:
        yield upstream
    finally:
        upstream.close()
    assert upstream.faults == []


def post(url: str, body: bytes, on_chunk=None, timeout: float = 30) -> tuple[int | None, bytes, str | None]:
    """POST a JSON-RPC body through the proxy: (status, the body as far as it came, how it broke
    off, if it did; status None: the connection closed with no answer). `on_chunk(body so far)`
    sees the body grow."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        try:
            conn.request("POST", "/mcp", body=body, headers={"Content-Type": "application/json",
                                                             "Accept": "application/json, text/event-stream"})
            response = conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError) as exc:  # no answer at all
            return None, b"", type(exc).__name__
        got, broke = b"", None
        try:
            while chunk := response.read1(65536):
                got += chunk
                if on_chunk is not None:
                    on_chunk(got)
        except (http.client.IncompleteRead, ConnectionError) as exc:
            broke = type(exc).__name__
        return response.status, got, broke
    finally:
        conn.close()


def recorded(db) -> list[tuple]:
    return query(db, "SELECT direction, CAST(raw AS BLOB), incomplete, exchange_id FROM frames "
                     "ORDER BY session_id, seq")


def exchanges(db) -> dict[str, tuple]:
    return {row[0]: row[1:] for row in query(db, "SELECT id, status, outcome FROM exchanges")}


def good_traffic_still_records(proxy, db, rid: int) -> None:
    assert post(proxy.url, PING % rid) == (200, PONG % rid, None)
    wait_for(lambda: [(d, raw) for d, raw, _, _ in recorded(db)][-2:] == [("c2s", PING % rid), ("s2c", PONG % rid)],
             30, "the good exchange recorded")


def assert_proxy_ends_cleanly(proxy) -> None:
    assert proxy.proc.poll() is None, "the proxy died: " + proxy.errors
    assert proxy.stop() == 0, proxy.errors
    assert "Traceback" not in proxy.errors, proxy.errors


def test_an_upstream_refusing_connections_gets_the_client_a_502_and_the_request_recorded(tmp_path):
    db = tmp_path / "proxy.db"
    with mcptap_proxy(db, f"http://127.0.0.1:{free_port()}/mcp") as proxy:  # nothing listens there
        began = time.monotonic()
        status, _, broke = post(proxy.url, PING % 1)
        assert time.monotonic() - began < 20
        assert status == 502, broke
        assert_proxy_ends_cleanly(proxy)
    ((direction, raw, _, exchange),) = recorded(db)
    assert (direction, raw) == ("c2s", PING % 1)
    assert exchanges(db)[exchange][1].startswith("error")  # the exchange says how it ended


def test_after_an_upstream_refused_connections_the_proxy_records_once_it_listens(tmp_path):
    db = tmp_path / "proxy.db"
    port = free_port()  # nothing listens there yet
    with mcptap_proxy(db, f"http://127.0.0.1:{port}/mcp") as proxy:
        began = time.monotonic()
        post(proxy.url, PING % 1)  # refused (see above for what the client gets)
        assert time.monotonic() - began < 20
        with raw_upstream(port):
            wait_for(lambda: accepting(port), 10, "the upstream to listen")
            good_traffic_still_records(proxy, db, 2)
            assert_proxy_ends_cleanly(proxy)
    assert [(d, raw) for d, raw, _, _ in recorded(db)][-2:] == [("c2s", PING % 2), ("s2c", PONG % 2)]


def test_an_upstream_resetting_an_sse_stream_mid_event_ends_the_clients_stream_and_keeps_what_passed(tmp_path):
    db = tmp_path / "proxy.db"
    with raw_upstream() as upstream, mcptap_proxy(db, f"http://127.0.0.1:{upstream.port}/mcp") as proxy:
        call = b'{"jsonrpc":"2.0","id":1,"method":"fault/reset_mid_event"}'

        def reset_once_the_cut_event_passed(body: bytes) -> None:
            if EVENT_CUT in body:
                upstream.reset.set()

        began = time.monotonic()
        status, body, broke = post(proxy.url, call, on_chunk=reset_once_the_cut_event_passed)
        assert time.monotonic() - began < 25, "the client's stream did not end with the upstream's"
        assert status == 200 and upstream.reset.is_set()
        assert broke is not None  # the client can tell the stream broke off: it did not end as a stream ends
        assert body == b"event: message\ndata: " + EVENT_ONE + b"\n\nevent: message\ndata: " + EVENT_CUT
        good_traffic_still_records(proxy, db, 2)
        assert_proxy_ends_cleanly(proxy)
    rows = recorded(db)
    assert [(d, raw, i) for d, raw, i, _ in rows] == [
        ("c2s", call, 0), ("s2c", EVENT_ONE, 0), ("s2c", EVENT_CUT, 1), ("c2s", PING % 2, 0), ("s2c", PONG % 2, 0)]
    status, outcome = exchanges(db)[rows[0][3]]
    assert status == 200 and outcome.startswith("error"), outcome


@pytest.mark.parametrize("fault", ["not_http", "not_json"])
def test_an_upstream_answering_garbage_gets_the_client_an_answer_and_the_proxy_goes_on_recording(tmp_path, fault):
    db = tmp_path / "proxy.db"
    call = b'{"jsonrpc":"2.0","id":1,"method":"fault/%s"}' % fault.encode()
    with raw_upstream() as upstream, mcptap_proxy(db, f"http://127.0.0.1:{upstream.port}/mcp") as proxy:
        status, body, broke = post(proxy.url, call)
        if fault == "not_http":  # the client gets an error answer, not a hang and not the garbage
            assert status == 502 and NOT_HTTP not in body
        else:  # an HTTP answer passes as it is: the analysis, not the proxy, judges its body
            assert (status, body, broke) == (200, NOT_JSON, None)
        good_traffic_still_records(proxy, db, 2)
        assert_proxy_ends_cleanly(proxy)
    rows = recorded(db)
    answer = [] if fault == "not_http" else [("s2c", NOT_JSON, 0)]
    assert [(d, raw, i) for d, raw, i, _ in rows] == [("c2s", call, 0), *answer, ("c2s", PING % 2, 0),
                                                      ("s2c", PONG % 2, 0)]
    status, outcome = exchanges(db)[rows[0][3]]
    if fault == "not_http":
        assert outcome.startswith("error"), outcome
    else:
        assert (status, outcome) == (200, "complete")
