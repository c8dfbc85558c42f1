"""Bounded memory for any input: `serve --listen` reads a request body only up to `--max-body`
(16 MiB by default) and answers a longer one 413 without reading it, so a 30 MB POST costs it
nothing (it took 850 MB). A real `mcptap serve --listen` process, raw-socket clients, and the
server's peak RSS (VmHWM) read from /proc before it stops."""

from __future__ import annotations

import json
import re
import signal
import subprocess

import pytest

from tests.conftest import mcptap, run, wait_for
from tests.hostile.test_hostile_work import INIT, imported
from tests.support.peakrss import peak_kb, run_measured
from tests.support import httpserve
from tests.support.rawhttp import post

PEAK_BOUND_KB = 200 * 1024  # serve's peak RSS after a 30 MB POST (it was 850 MB)
BIG_BODY = 30 << 20


@pytest.fixture
def served(tmp_path):
    """`mcptap serve --listen 127.0.0.1:0` of a session with a handshake and a ping: (process, port)."""
    db = imported(tmp_path, "served", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
                                       ("s2c", '{"jsonrpc":"2.0","id":1,"result":{}}')])
    started: list[subprocess.Popen] = []

    def start(*options: str) -> tuple[subprocess.Popen, int]:
        proc = subprocess.Popen(mcptap("serve", "--db", str(db), "s1", "--listen", "127.0.0.1:0", *options),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started.append(proc)
        line = wait_for(lambda: proc.stderr.readline(), 60, "serve to say where it listens")
        port = int(re.search(rb":(\d+)/mcp", line).group(1))
        return proc, port

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stderr.close()


def big_call(size: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"'
    return head + b"x" * (size - len(head) - 3) + b'"}}'


def test_serve_listen_refuses_a_thirty_megabyte_post_with_413_unread_and_stays_small(served):
    proc, port = served()
    status, body = post(port, big_call(BIG_BODY), send_body=False)
    assert status == 413, body
    assert json.loads(body)["error"]["code"] == -32600
    status, body = post(port, INIT.encode())  # still serving
    assert status == 200 and json.loads(body)["id"] == 0
    assert peak_kb(proc.pid) < PEAK_BOUND_KB, f"serve peaked at {peak_kb(proc.pid) // 1024} MB"


def test_serve_listen_max_body_sets_the_largest_body_read(served):
    proc, port = served("--max-body", "1K")
    status, _ = post(port, big_call(2048), send_body=False)
    assert status == 413
    status, body = post(port, big_call(1000))
    assert status == 200 and json.loads(body)["id"] == 2


def test_serve_refuses_a_max_body_it_cannot_read_in_one_line(tmp_path):
    result = run(mcptap("serve", "--db", str(tmp_path / "none.db"), "s1", "--listen", "0", "--max-body", "lots"))
    err = result.stderr.decode()
    assert result.returncode == 2 and "--max-body" in err and len(err.strip().splitlines()) == 1, err


# -- replay of a live server's huge answer ---------------------------------------------------

HUGE_ANSWER = 60 << 20  # bytes of the live server's answer to tools/call
REPLAY_PEAK_BOUND_KB = 160 * 1024  # replay's peak RSS with --max-frame 1M (it held such an answer 5 times)

SERVER = r'''
import json, sys
size = int(sys.argv[1])
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        out.write(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
                  b'"serverInfo":{"name":"s","version":"1"}}}\n' % msg["id"])
    else:
        head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % msg["id"]
        tail = b'"}]}}\n'
        out.write(head)
        left = size - len(head) - len(tail) + 1
        block = b"x" * (1 << 20)
        while left > 0:
            out.write(block[:left])
            left -= len(block)
        out.write(tail)
    out.flush()
'''

def test_replay_keeps_a_live_servers_huge_answer_cut_at_max_frame_and_records_it_marked(tmp_path):
    import sys

    db = imported(tmp_path, "call", [
        ("c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}'),
        ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'),
        ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"small"}]}}'),
    ])
    server = tmp_path / "server.py"
    server.write_text(SERVER, encoding="utf-8")
    command = f"{sys.executable} {server} {HUGE_ANSWER}"
    result, peak = run_measured(mcptap(
        "replay", "--db", str(db), "s1", "--command", command, "--max-frame", "1M", "--timeout", "60", "--format", "json"),
        capture_output=True, timeout=300)
    err = result.stderr.decode(errors="replace")
    assert result.returncode == 1, err[-2000:]  # a difference: the answer could not be compared
    report = json.loads(result.stdout)
    notes = [c["note"] for c in report["messages"] if c["note"]]
    assert len(notes) == 1 and "past --max-frame" in notes[0], report
    assert peak < REPLAY_PEAK_BOUND_KB, f"replay peaked at {peak // 1024} MB"
    import sqlite3

    conn = sqlite3.connect(db)
    (size, kept, incomplete), = conn.execute(
        "SELECT size, length(CAST(raw AS BLOB)), incomplete FROM frames JOIN sessions ON sessions.id = session_id "
        "WHERE replay_of IS NOT NULL AND direction = 's2c' AND size > 1000000").fetchall()
    conn.close()
    assert (size, kept, incomplete) == (HUGE_ANSWER, 1 << 20, 2)


class _HugeAnswers(httpserve.QuietHandler):
    """A Streamable HTTP server whose tools/call answer is HUGE_HTTP bytes, as JSON or (path /sse)
    as one event of a stream."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if msg["method"] == "initialize":
            body = (b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
                    b'"serverInfo":{"name":"s","version":"1"}}}' % msg["id"])
        else:
            head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % msg["id"]
            body = head + b"x" * (HUGE_HTTP - len(head) - 5) + b'"}]}}'
        sse = self.path.endswith("/sse") and msg["method"] != "initialize"
        if sse:
            body = b"event: message\ndata: " + body + b"\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET


HUGE_HTTP = 8 << 20


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
def test_replay_over_http_keeps_a_huge_json_or_event_answer_cut_at_max_frame(tmp_path, path):
    import sqlite3

    db = imported(tmp_path, "call", [
        ("c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}'),
        ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'),
        ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"small"}]}}'),
    ])
    with httpserve.serving(_HugeAnswers) as server:
        result = run(mcptap("replay", "--db", str(db), "s1", "--url", httpserve.url(server, path), "--max-frame", "1M",
                            "--timeout", "60", "--format", "json"), timeout=300)
    assert result.returncode == 1, result.stderr.decode(errors="replace")[-2000:]
    notes = [c["note"] for c in json.loads(result.stdout)["messages"] if c["note"]]
    assert len(notes) == 1 and "past --max-frame" in notes[0], notes
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT size, length(CAST(raw AS BLOB)), incomplete FROM frames JOIN sessions ON sessions.id = session_id "
        "WHERE replay_of IS NOT NULL AND direction = 's2c' AND size > 1000000").fetchall()
    conn.close()
    assert rows == [(HUGE_HTTP, 1 << 20, 2)]


def test_serve_on_stdio_answers_a_thirty_megabyte_line_with_an_error_without_holding_it(tmp_path):
    import sys

    db = imported(tmp_path, "stdio", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
                                      ("s2c", '{"jsonrpc":"2.0","id":1,"result":{}}')])
    lines = INIT.encode() + b"\n" + big_call(BIG_BODY) + b"\n" + b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n'
    result, peak = run_measured(mcptap("serve", "--db", str(db), "s1"), input=lines, capture_output=True, timeout=300)
    err = result.stderr.decode(errors="replace")
    assert result.returncode == 0, err[-2000:]
    answers = [json.loads(x) for x in result.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, None, 3]
    assert answers[1]["error"]["code"] == -32600 and "--max-body" in answers[1]["error"]["message"]
    assert peak < PEAK_BOUND_KB // 2, f"serve peaked at {peak // 1024} MB"
