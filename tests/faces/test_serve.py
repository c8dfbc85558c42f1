"""`mcptap serve`: a recorded session answers a live client. The real `mcp` SDK client runs the
same calls against it over stdio and Streamable HTTP, a session with a cancelled call included;
matching, notifications, cancellation, faults and pacing are checked frame by frame with a
hand-driven stdio client."""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from tests.conftest import frames, mcptap, run, tee, tool
from tests.support.http_helpers import Relay, free_port, wire_exchanges
from tests.support.inprocess import cli

ANSWER_TIMEOUT_S = 10


def with_config(*argv: str) -> str:
    """A command line for the SDK to start: it starts servers with a minimal environment, so hand
    over the tests' own config folder (the redaction key the tee and `mcptap serve` use)."""
    return shlex.join(["env", f"XDG_CONFIG_HOME={os.environ['XDG_CONFIG_HOME']}", *argv])


def record(db, sdk_python, mode: str, *what: str) -> dict:
    chain = with_config(*tee(db, sdk_python, tool("sdk_http_server.py"), "stdio", name="sdk"))
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


def nap_calls(wire: list[tuple[str, bytes]]) -> tuple[list, list, dict]:
    """Of a session's frames, as (direction, raw): the ids of its nap calls in the order sent,
    the ids its client cancelled, and the server's answers by id (as JSON text)."""
    calls, cancelled, answers = [], [], {}
    for direction, raw in wire:
        value = json.loads(raw)
        if direction == "c2s" and value.get("method") == "tools/call" and value["params"]["name"] == "nap":
            calls.append(value["id"])
        elif direction == "c2s" and value.get("method") == "notifications/cancelled":
            cancelled.append(value["params"]["requestId"])
        elif direction == "s2c" and ("result" in value or "error" in value):
            answers[json.dumps(value.get("id"))] = value
    return sorted(calls), cancelled, answers


@pytest.fixture(scope="module")
def cancel_recorded(tmp_path_factory, sdk_python):
    """The SDK client cancelling a nap call at its first progress, then making it again, against
    the SDK test server through the tee, in both eras: the recording, what the client got, and
    the recorded answer to the second call."""
    folder = tmp_path_factory.mktemp("cancel")
    out = {}
    for mode in ("legacy", "auto"):
        db = folder / f"{mode}.db"
        chain = with_config(*tee(db, sdk_python, tool("sdk_server.py"), name="nap"))
        result = run([sdk_python, tool("sdk_cancel_client.py"), mode, "stdio", chain], timeout=120)
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        got = json.loads(result.stdout)
        (first, second), cancelled, answers = nap_calls([("c2s", raw) for raw in frames(db, "c2s")]
                                                        + [("s2c", raw) for raw in frames(db, "s2c")])
        # what the tests below rely on: the first call was cancelled and never answered, the second was
        assert got["first"] == "cancelled" and cancelled == [first] and json.dumps(first) not in answers, got
        out[mode] = db, got, answers[json.dumps(second)]["result"]
    return out


def assert_cancelled_call_unanswered(wire: list[tuple[str, bytes]], recorded_result: dict, *, cancel_sent: bool) -> None:
    (first, second), cancelled, answers = nap_calls(wire)
    assert json.dumps(first) not in answers  # serve never answered the call the recording never answered
    assert cancelled == ([first] if cancel_sent else [])  # and the client's cancellation step happened
    assert answers[json.dumps(second)]["result"] == recorded_result


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_serve_leaves_a_call_the_recording_never_answered_unanswered_until_the_sdk_client_cancels_it_over_stdio(
        tmp_path, sdk_python, cancel_recorded, mode):
    db, original, recorded_result = cancel_recorded[mode]
    tap = tmp_path / "tap"
    tap.mkdir()
    chain = with_config(sys.executable, tool("wiretap.py"), str(tap), "--", *mcptap("serve", "--db", str(db), "nap"))
    result = run([sdk_python, tool("sdk_cancel_client.py"), mode, "stdio", chain], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert json.loads(result.stdout) == original  # the first call's one progress, then cancelled; the second answered
    wire = [(direction, raw) for direction in ("c2s", "s2c")
            for raw in (tap / f"{direction}.bin").read_bytes().splitlines()]
    assert_cancelled_call_unanswered(wire, recorded_result, cancel_sent=True)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_serve_over_http_holds_an_unanswered_call_open_until_the_sdk_client_cancels_it_and_goes_on_serving(
        sdk_python, cancel_recorded, mode):
    """2025-11-25: the client cancels with a notifications/cancelled POST; 2026-07-28: by closing
    the call's response stream. A second handshake-era session is matched from the recording's
    start again."""
    db, original, recorded_result = cancel_recorded[mode]
    port = free_port()
    server = subprocess.Popen(mcptap("serve", "--db", str(db), "nap", "--listen", f"127.0.0.1:{port}"),
                              stderr=subprocess.PIPE)
    try:
        line = server.stderr.readline().decode()
        assert f"http://127.0.0.1:{port}/mcp" in line, line
        relay = Relay(port)
        try:
            result = run([sdk_python, tool("sdk_cancel_client.py"), mode, "streamable",
                          f"http://127.0.0.1:{relay.port}/mcp"], timeout=120)
        finally:
            relay.close()
        assert result.returncode == 0, result.stderr.decode()[-3000:]
        assert json.loads(result.stdout) == original
        wire = [frame for exchange in wire_exchanges(relay).elements() for frame in exchange]
        assert_cancelled_call_unanswered(wire, recorded_result, cancel_sent=mode == "legacy")
        if mode == "legacy":
            again = run([sdk_python, tool("sdk_cancel_client.py"), mode, "streamable", f"http://127.0.0.1:{port}/mcp"],
                        timeout=120)
            assert again.returncode == 0, again.stderr.decode()[-3000:]
            assert json.loads(again.stdout) == original
        ping = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b'{"jsonrpc":"2.0","id":9,"method":"ping"}',
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(ping, timeout=ANSWER_TIMEOUT_S) as answer:
            assert json.loads(answer.read()) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        server.terminate()
        status = server.wait(10)
        rest = server.stderr.read().decode()
        server.stderr.close()
    assert status == 0 and rest == "", rest  # the client going away was no error


class StdioClient:
    """`mcptap serve` over stdio, driven a line at a time."""

    def __init__(self, db, *args: str, session: str = "sdk"):
        self.proc = subprocess.Popen(mcptap("serve", "--db", str(db), session, *args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[tuple[float, bytes]] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

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

    def finish(self) -> tuple[int, list[dict]]:
        """End stdin, and give the server's exit status and every frame it wrote not yet read."""
        self.proc.stdin.close()
        status = self.proc.wait(10)
        self.reader.join(10)
        rest = []
        while not self.lines.empty():
            rest.append(json.loads(self.lines.get()[1]))
        return status, rest

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

    def make(*args: str, db=legacy_db, session: str = "sdk") -> StdioClient:
        made.append(StdioClient(db, *args, session=session))
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


def test_an_unused_recorded_request_comes_before_a_used_one_and_one_never_answered_gets_its_progress_only(
        client_factory, cancel_recorded):
    c = client_factory(db=cancel_recorded["legacy"][0], session="nap")
    c.send(call(1, "nap", {"seconds": 1.0}, token="a"))  # the recording cancelled this one
    c.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert c.read_json()["params"] == {"progressToken": "a", "progress": 1, "total": 2}
    assert c.read_json() == {"jsonrpc": "2.0", "id": 2, "result": {}}  # and nothing for call 1 before it
    c.send(call(3, "nap", {"seconds": 1.0}, token="b"))  # the same call: the recorded one answered
    assert [c.read_json()["params"]["progress"] for _ in range(2)] == [1, 2]
    assert text_of(c.read_json()) == "rested 1.0s"
    c.send(call(4, "nap", {"seconds": 1.0}))  # again: every one used, the answered one again
    answer = c.read_json()
    assert answer["id"] == 4 and text_of(answer) == "rested 1.0s"
    assert c.close() == 0


def test_a_notification_recorded_after_a_cancel_is_not_sent_for_the_cancelled_request(tmp_path, client_factory):
    rows = [("c2s", {"id": 1, "method": "tools/call", "params": {"name": "nap", "arguments": {}}}),
            ("s2c", {"method": "notifications/message", "params": {"level": "info", "data": "while it ran"}}),
            ("c2s", {"method": "notifications/cancelled", "params": {"requestId": 1}}),
            ("s2c", {"method": "notifications/tools/list_changed"})]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"session": "cancelled", "ts": 1.0 + i, "direction": direction,
                                       "raw": json.dumps({"jsonrpc": "2.0", **value})}) + "\n"
                           for i, (direction, value) in enumerate(rows)), encoding="utf-8")
    db = tmp_path / "imported.db"
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    c = client_factory(db=db, session="cancelled")
    c.send(call(7, "nap", {}))
    c.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert c.read_json()["method"] == "notifications/message"
    assert c.read_json()["id"] == 8


def post(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


@pytest.fixture
def http_serve(cancel_recorded):
    """`mcptap serve --listen` of the recording with a cancelled call; yields its port, and
    after the test, stops it and checks that it said nothing more and exited 0."""
    port = free_port()
    server = subprocess.Popen(mcptap("serve", "--db", str(cancel_recorded["legacy"][0]), "nap", "--listen",
                                     f"127.0.0.1:{port}"), stderr=subprocess.PIPE)
    try:
        assert "http://" in server.stderr.readline().decode()
        yield server, port
    finally:
        server.terminate()
        status = server.wait(10)
        rest = server.stderr.read().decode()
        server.stderr.close()
    assert status == 0 and rest == "", rest


def test_serve_over_http_answers_one_request_after_another_on_a_kept_alive_connection(http_serve):
    _, port = http_serve
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        for ident in (1, 2):
            sock.sendall(post({"jsonrpc": "2.0", "id": ident, "method": "ping"}))
            got = b""
            while not got.endswith(b"}}"):
                chunk = sock.recv(65536)
                assert chunk, got  # not closed after the first answer
                got += chunk
            assert got.startswith(b"HTTP/1.1 200") and got.endswith(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % ident)


def test_serve_over_http_ends_an_unanswered_stream_when_it_stops(http_serve):
    server, port = http_serve
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        sock.sendall(post(call(1, "nap", {"seconds": 1.0}, token="t")))
        got = b""
        while b"notifications/progress" not in got:
            chunk = sock.recv(65536)
            assert chunk, got
            got += chunk
        server.terminate()
        while chunk := sock.recv(65536):  # the stream ends with the server, nothing more on it
            got += chunk
    assert got.startswith(b"HTTP/1.1 200") and b'"result"' not in got, got


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


def test_a_cancelled_request_is_never_answered_even_when_its_answer_was_still_to_come(client_factory):
    c = client_factory("--delay", "tools/list=1.0")
    c.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "gave up"}})
    c.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    status, answers = c.finish()  # serve sends what it still owes before it exits
    assert status == 0 and [a["id"] for a in answers] == [2]


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
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run(mcptap("serve", "--db", str(legacy_db), "sdk", "--listen", str(port)), timeout=30)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr.decode()
