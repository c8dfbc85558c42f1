"""`mcptap show --follow` and `mcptap sessions --follow` beside a real tee that is recording: each
frame shows within a second of its storage, the follow never ends early, and it ends with exit 0
when the session ends (or on Ctrl-C)."""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import mcptap, run, tee, wait_for
from tests.support.inprocess import cli

SERVER = [sys.executable, "-m", "mcptap.demo.server"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


class Lines:
    """A process's stdout lines as they come, each with the moment it was read."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.got, self.all = proc, queue.Queue(), []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.got.put((time.monotonic(), line.rstrip("\n")))
        self.got.put((time.monotonic(), None))

    def until(self, needle: str, timeout: float = 20.0) -> float:
        """When the first line holding `needle` was read (lines before it are kept in `all`)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                at, line = self.got.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no line with {needle!r} within {timeout}s: {self.all[-20:]}") from None
            if line is None:
                raise AssertionError(f"the output ended without {needle!r}: {self.all[-20:]}")
            self.all.append(line)
            if needle in line:
                return at


def send(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def stored(db, needle: bytes) -> float:
    """When a frame holding `needle` is in the database (polled every few ms)."""
    def there():
        conn = sqlite3.connect(db)
        try:
            return conn.execute("SELECT 1 FROM frames WHERE instr(CAST(raw AS BLOB), ?)", (needle,)).fetchone()
        finally:
            conn.close()
    wait_for(there, 20, f"a frame holding {needle!r} in the database", interval=0.005)
    return time.monotonic()


def session_stored(db, label: str) -> None:
    def there():
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        try:
            return conn.execute("SELECT 1 FROM sessions WHERE label = ?", (label,)).fetchone()
        except sqlite3.Error:
            return None
        finally:
            conn.close()
    wait_for(there, 20, f"session {label} in the database")


@pytest.fixture
def recording(db):
    """A tee recording the bundled server as `slow`, initialized and its session stored; the test
    sends the rest."""
    proc = subprocess.Popen(tee(db, *SERVER, name="slow"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        send(proc, INIT)
        assert b'"result"' in proc.stdout.readline()
        session_stored(db, "slow")
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if not pipe.closed:
                pipe.close()


@contextlib.contextmanager
def following(db, *args: str):
    """`mcptap ARGS --db DB` started, with its output lines as they come; killed if still running."""
    follower = subprocess.Popen(mcptap(*args, "--db", str(db)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    try:
        yield follower, Lines(follower)
    finally:
        if follower.poll() is None:
            follower.kill()
        follower.wait(10)
        follower.stdout.close()
        follower.stderr.close()


def interrupted(follower: subprocess.Popen) -> int:
    """Ctrl-C, and its exit status."""
    follower.send_signal(signal.SIGINT)
    return follower.wait(15)


def test_show_follow_prints_each_frame_within_a_second_of_its_storage_and_exits_0_when_the_session_ends(
        db, recording):
    with following(db, "show", "--follow", "slow") as (follower, lines):
        lines.until("request initialize id=1")
        for ident in (7, 8):
            send(recording, {"jsonrpc": "2.0", "id": ident, "method": "ping"})
            at = stored(db, b'"id": %d, "method": "ping"' % ident)
            assert lines.until(f"request ping id={ident}") - at <= 1.0
        answer = lines.until("response id=8")
        assert "#" in lines.all[-1]  # the pair it answers, with the latency
        while time.monotonic() < answer + 1.5:  # a quiet while: the follow does not end on its own
            assert follower.poll() is None
            time.sleep(0.05)
        recording.stdin.close()  # the server's stdin ends: it exits, the tee ends the session
        lines.until("session ended")
        assert follower.wait(15) == 0
        assert follower.stderr.read() == ""


def test_follow_without_a_session_follows_the_newest_then_the_next_one_and_ctrl_c_ends_it_with_0(db, recording):
    with following(db, "show", "--follow") as (follower, lines):
        lines.until("slow  stdio")
        recording.stdin.close()
        lines.until("session ended")
        second = run(tee(db, *SERVER, name="next"), input=(json.dumps(INIT) + "\n").encode())
        assert second.returncode == 0
        lines.until("next  stdio")
        lines.until("request initialize id=1")
        assert interrupted(follower) == 0
        assert "Traceback" not in follower.stderr.read()


def test_sessions_follow_says_when_each_session_starts_and_ends(db, recording):
    with following(db, "sessions", "--follow") as (follower, lines):
        lines.until("started")
        recording.stdin.close()
        assert "slow" in lines.all[-1]
        lines.until("ended")
        assert "frames  exit 0" in lines.all[-1]
        assert interrupted(follower) == 0


@pytest.mark.parametrize("args, said", [
    (("show", "--follow", "nope"), "no session 'nope'"),
    (("show", "--follow", "--format", "json"), "--follow"),
    (("sessions", "--follow", "--json"), "--follow"),
])
def test_bad_follow_input_is_one_line_and_exit_2(db, recording, args, said):
    done = run(mcptap(*args, "--db", str(db)), timeout=20)
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1 and said in err, err


def test_show_follow_shows_a_session_the_proxy_is_recording_and_its_end(db, sdk_python):
    from tests.support.http_helpers import mcptap_proxy, sdk_client, sdk_http_server

    with sdk_http_server(sdk_python, "streamable") as upstream, mcptap_proxy(db, upstream) as proxy:
        wait_for(lambda: db.exists(), 20, "the proxy's database")
        with following(db, "show", "--follow") as (follower, lines):
            out = sdk_client(sdk_python, "legacy", "streamable", proxy.url + "/mcp")
            assert out["echo"] == "héllo ✓"
            lines.until("http")  # the session's header: its transport
            lines.until("request tools/call")
            assert proxy.stop() == 0  # the proxy ends its sessions as it stops
            lines.until("session ended")
            assert interrupted(follower) == 0


def test_show_follow_shows_the_oauth_flows_exchanges_in_time_order_among_the_frames(db, sdk_python):
    from tests.conftest import tool
    from tests.support.http_helpers import mitmdump
    from tests.support.oauth import running_oauth_server

    addon = cli("addon-path").stdout.decode().strip()
    with running_oauth_server(sdk_python) as (_, rs), following(db, "show", "--follow") as (follower, lines):
        with mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
            done = subprocess.run([sdk_python, tool("sdk_oauth_client.py"), "legacy", f"{rs}/mcp",
                                   f"http://127.0.0.1:{proxy['port']}"], capture_output=True, timeout=90)
            assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
            lines.until("request tools/call")
        assert proxy["status"] == 0, proxy["errors"]  # mitmdump stopped: it ends its sessions
        lines.until("session ended")
        assert interrupted(follower) == 0
    body = lines.all[lines.all.index(next(line for line in lines.all if line.lstrip().startswith("#"))) + 1:]
    shown = [line.split() for line in body]
    roles = [words[3] for words in shown if len(words) > 3 and words[1] == "http"]
    assert roles == ["auth-challenge", "auth-discovery", "auth-discovery", "auth-register", "auth-authorize",
                     "auth-token"], body
    first_frame = next(n for n, words in enumerate(shown) if len(words) > 2 and words[0].isdigit())
    challenge = next(n for n, words in enumerate(shown) if "auth-challenge" in words)
    assert challenge < first_frame  # the refused initialize came after its request started: the exchange first
    offsets = [float(words[0] if words[1] == "http" else words[1]) for words in shown
               if len(words) > 2 and (words[1] == "http" or words[0].isdigit())]
    assert offsets == sorted(offsets), body
