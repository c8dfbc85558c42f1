"""`mcptap serve`: a recorded session answers a live client. The real `mcp` SDK client runs the
same calls against it over stdio and Streamable HTTP; matching, notifications, faults and
pacing are checked frame by frame with a hand-driven stdio client."""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest

from conftest import mcptap, run, tee, tool
from http_helpers import free_port

ANSWER_TIMEOUT_S = 10


def record(db, sdk_python, mode: str, *what: str) -> dict:
    # the SDK starts servers with a minimal environment: hand the tee the tests' own config folder (its
    # redaction key), which `mcptap serve`, started by the tests, uses too
    chain = shlex.join(["env", f"XDG_CONFIG_HOME={os.environ['XDG_CONFIG_HOME']}",
                        *tee(db, sdk_python, tool("sdk_http_server.py"), "stdio", name="sdk")])
    result = run([sdk_python, tool("sdk_http_client.py"), mode, "stdio", chain, *what], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, sdk_python):
    """Two recordings of the SDK test server: the handshake era (with elicitation and sampling)
    and 2026-07-28; and what the client got each time."""
    folder = tmp_path_factory.mktemp("serve")
    out = {}
    for mode, what in (("legacy", ("ask", "sample", "login")), ("auto", ())):
        path = folder / f"{mode}.db"
        out[mode] = (path, what, record(path, sdk_python, mode, *what))
    return out


@pytest.fixture
def legacy_db(tmp_path, recorded):
    path = tmp_path / "legacy.db"
    shutil.copy(recorded["legacy"][0], path)
    return path


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_serve_satisfies_the_sdk_client_running_the_same_calls_and_answers_an_unmatched_call_with_an_error(
        tmp_path, sdk_python, recorded, mode, transport):
    db, what, original = recorded[mode]
    if transport == "stdio":
        target = ["stdio", shlex.join(mcptap("serve", "--db", str(db), "sdk"))]
        result = run([sdk_python, tool("sdk_http_client.py"), mode, *target, *what, "prompts"], timeout=120)
    else:
        port = free_port()
        server = subprocess.Popen(mcptap("serve", "--db", str(db), "sdk", "--listen", f"127.0.0.1:{port}"),
                                  stderr=subprocess.PIPE)
        try:
            line = server.stderr.readline().decode()
            assert f"http://127.0.0.1:{port}/mcp" in line, line
            result = run([sdk_python, tool("sdk_http_client.py"), mode, "streamable", f"http://127.0.0.1:{port}/mcp",
                          *what, "prompts"], timeout=120)
        finally:
            server.terminate()
            assert server.wait(10) == 0
            server.stderr.close()
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    got = json.loads(result.stdout)
    assert got.pop("prompts") == "error -32601: mcptap serve: the recording has no answer to prompts/list"
    assert got == original


class StdioClient:
    """`mcptap serve` over stdio, driven a line at a time."""

    def __init__(self, db, *args: str):
        self.proc = subprocess.Popen(mcptap("serve", "--db", str(db), "sdk", *args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[tuple[float, bytes]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.proc.stdout:
                self.lines.put((time.monotonic(), line.rstrip(b"\n")))
        except (ValueError, OSError):  # closed by stop()
            pass

    def send(self, message: dict | bytes) -> float:
        """Send, and say when: the time taken before writing, so that no answer can be seen as
        earlier than it was (the server cannot have read the request before then)."""
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        at = time.monotonic()
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()
        return at

    def read(self, timeout: float = ANSWER_TIMEOUT_S) -> tuple[float, bytes]:
        return self.lines.get(timeout=timeout)

    def read_json(self, timeout: float = ANSWER_TIMEOUT_S) -> dict:
        return json.loads(self.read(timeout)[1])

    def nothing_within(self, seconds: float) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def close(self) -> int:
        """End stdin (the client is done) and give the server's exit status."""
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(10)
        finally:
            self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if not pipe.closed:
                pipe.close()


@pytest.fixture
def client_factory(legacy_db):
    made: list[StdioClient] = []

    def make(*args: str) -> StdioClient:
        made.append(StdioClient(legacy_db, *args))
        return made[-1]

    yield make
    for c in made:
        c.stop()


def call(ident, name: str, arguments: dict, token=None) -> dict:
    params = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def text_of(answer: dict) -> str:
    return answer["result"]["content"][0]["text"]


def test_a_request_is_matched_by_params_first_then_by_method_in_recorded_order(client_factory):
    c = client_factory()
    c.send(call(7, "sample", {"topic": "ponds"}))
    answer = c.read_json()
    assert answer["id"] == 7 and text_of(answer) == "the model said: an old silent pond"
    c.send(call("x", "echo", {"text": "not what was recorded"}))
    answer = c.read_json()
    assert answer["id"] == "x" and text_of(answer) == "héllo ✓"  # the first tools/call not yet used: echo's
    assert c.close() == 0


def test_a_call_with_a_password_matches_its_recorded_redacted_self(client_factory):
    c = client_factory()
    c.send(call(1, "login", {"user": "ann", "password": "hunter2-pw"}))  # first: by method order it would be echo's
    answer = c.read_json()
    assert answer["id"] == 1 and text_of(answer) == "welcome ann"


def test_progress_notifications_come_first_and_carry_the_live_progress_token(client_factory):
    c = client_factory()
    c.send(call(1, "slow", {"steps": 3}, token="live-token"))
    notes = [c.read_json() for _ in range(3)]
    assert [n["method"] for n in notes] == ["notifications/progress"] * 3
    assert [n["params"]["progressToken"] for n in notes] == ["live-token"] * 3
    assert [n["params"]["progress"] for n in notes] == [1.0, 2.0, 3.0]
    assert c.read_json()["id"] == 1
    c.send(call(2, "slow", {"steps": 3}))  # no token asked: no progress sent
    answer = c.read_json()
    assert answer["id"] == 2 and text_of(answer) == "done after 3 steps"


def test_unmatched_unparseable_and_notification_frames_are_answered_as_json_rpc_says(client_factory):
    c = client_factory()
    c.send({"jsonrpc": "2.0", "id": 1, "method": "resources/list"})
    assert c.read_json()["error"]["code"] == -32601
    c.send(b"{not json")
    assert c.read_json()["error"]["code"] == -32700
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    c.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert c.read_json() == {"jsonrpc": "2.0", "id": 2, "result": {}}  # the notification got no answer
    assert c.close() == 0


def test_fault_drop_never_answers_that_method_but_answers_the_rest(client_factory):
    c = client_factory("--drop", "tools/list")
    c.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    c.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert c.read_json()["id"] == 2
    assert c.nothing_within(0.5)


def test_fault_delay_answers_late_without_holding_up_other_requests(client_factory):
    c = client_factory("--delay", "tools/list=1.0")
    c.send({"jsonrpc": "2.0", "id": 0, "method": "ping"})
    assert c.read_json()["id"] == 0  # it is up and reading: what follows times answers, not start-up
    sent = c.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    c.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    first_at, first = c.read()
    second_at, second = c.read()
    assert json.loads(first)["id"] == 2 and first_at - sent < 1.0
    assert json.loads(second)["id"] == 1 and second_at - sent >= 1.0


def test_fault_corrupt_answers_with_a_frame_that_is_not_json(client_factory):
    c = client_factory("--corrupt", "tools/list")
    c.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    _, raw = c.read()
    assert raw.startswith(b'{"jsonrpc"')
    with pytest.raises(ValueError):
        json.loads(raw)


def test_pace_answers_after_the_recorded_latency(client_factory, legacy_db):
    conn = sqlite3.connect(legacy_db)
    (latency,) = conn.execute(
        "SELECT r.ts - q.ts FROM frames q JOIN frames r ON r.session_id = q.session_id AND r.direction = 's2c' "
        "AND r.seq > q.seq WHERE q.raw LIKE '%\"method\":\"initialize\"%' ORDER BY r.seq LIMIT 1").fetchone()
    conn.close()
    c = client_factory("--pace")
    sent = c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    at, raw = c.read()
    assert json.loads(raw)["result"]["serverInfo"]
    assert at - sent >= latency * 0.95


@pytest.mark.parametrize("args, says", [
    (("no-such-session",), "no session 'no-such-session'"),
    (("sdk", "--delay", "tools/list"), "--delay takes METHOD=SECONDS"),
    (("sdk", "--delay", "tools/list=inf"), "--delay takes METHOD=SECONDS"),
    (("sdk", "--listen", "99999"), "expected [HOST:]PORT"),
])
def test_serve_usage_mistakes_are_one_line_errors(legacy_db, args, says):
    result = run(mcptap("serve", "--db", str(legacy_db), *args), timeout=30)
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr.decode()


def test_serve_on_a_port_in_use_is_a_one_line_error(legacy_db):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run(mcptap("serve", "--db", str(legacy_db), "sdk", "--listen", str(port)), timeout=30)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr.decode()
