"""Bounded resources in capture and import: a frame larger than
`--max-frame` is stored cut at the limit and marked (`incomplete` 2, `size` its full size) while
the wire passes untouched; decompression is a step at a time; the SSE parser is linear and keeps
only the unfinished event; a huge event holds back no other client's frames; the proxy stops
within STOP_S whatever is in flight. Real processes throughout (a real `mcptap proxy` in front
of a raw-socket upstream, a real stdio tee, `mcptap import` of a dump mitmproxy's own writer
wrote), with a 1 MiB limit and a few MB of input; the gigabyte figures are bench/bounds.py's."""

from __future__ import annotations

import brotli
import contextlib
import gzip
import hashlib
import http.client
import io
import json
import os
import socket
import sys
import threading
import time

import pytest
from mitmproxy import io as mitm_io
from mitmproxy.test import tflow

from mcptap.wire.sse import SSEParser
from tests.conftest import analyze_json, mcptap, rows, wait_for
from tests.support.http_helpers import mcptap_proxy
from tests.support.inprocess import cli
from tests.support.rawhttp import RawServer, answer, read_request, stream_head
from tests.support.rawhttp import chunk as send_chunk

LIMIT = 1 << 20  # --max-frame in these tests
BIG = 6 << 20  # the decoded size of each hostile frame
STOP_S = 5.0  # the proxy ends this soon after SIGINT, whatever is in flight
PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
PONG = b'{"jsonrpc":"2.0","id":%d,"result":{}}'
FIRST = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"first"}}'


def padded(head: bytes, size: int, tail: bytes = b'"}}') -> bytes:
    """A JSON-RPC message of exactly `size` bytes: a string member of `x`s."""
    return head + b"x" * (size - len(head) - len(tail)) + tail


BOMB_CALL = padded(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"', BIG)
BOMB_ANSWER = padded(b'{"jsonrpc":"2.0","id":8,"result":{"pad":"', BIG)
BIG_ANSWER = padded(b'{"jsonrpc":"2.0","id":9,"result":{"pad":"', BIG)


class Upstream(RawServer):
    """An HTTP/1.1 server on raw sockets: each connection takes one request and answers as its
    JSON-RPC method asks (a gzip request body is read decoded); a GET gets an endless event."""

    backlog = 32
    quiet_resets = True  # the client (or the proxy, stopping) went away mid-stream

    def __init__(self) -> None:
        self.bodies: list[bytes] = []  # request bodies as they came off the wire
        self.sent: dict[str, bytes] = {}  # answer bodies as they went on it
        self.stop = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        request = read_request(conn)
        if request is None:
            return
        if request.head.startswith(b"GET "):
            return self._endless(conn)
        body = request.body
        self.bodies.append(body)
        if request.fields.get(b"content-encoding") == b"gzip":
            body = gzip.decompress(body)
        rpc = json.loads(body)
        getattr(self, "_" + rpc["method"].replace("/", "_"))(conn, rpc.get("id"))

    def _ping(self, conn, rid) -> None:
        answer(conn, PONG % rid)

    def _bomb_answer(self, conn, rid) -> None:
        body = self.sent["bomb"] = gzip.compress(BOMB_ANSWER, 9)
        answer(conn, body, headers=b"Content-Encoding: gzip\r\n")

    def _big_answer(self, conn, rid) -> None:
        answer(conn, BIG_ANSWER)

    def _stream_endless(self, conn, rid) -> None:
        self._endless(conn)

    def _endless(self, conn) -> None:
        """A first event, then one event that never ends, until the test says stop."""
        stream_head(conn)
        block = b"x" * 65536
        for data in [b"event: message\ndata: " + FIRST + b"\n\n", b'data: {"jsonrpc":"2.0","method":"n","params":"']:
            send_chunk(conn, data)
        sent = 0
        while not self.stop.is_set() and sent < 256 << 20:
            send_chunk(conn, block)
            sent += len(block)

    def close(self, join: float = 0) -> None:
        self.stop.set()
        super().close(join)


@contextlib.contextmanager
def upstream_and_proxy(db):
    upstream = Upstream()
    try:
        with mcptap_proxy(db, f"http://127.0.0.1:{upstream.port}/mcp", "--max-frame", str(LIMIT)) as proxy:
            yield upstream, proxy
    finally:
        upstream.close()
    assert upstream.faults == []


def request(url: str, method: str, body: bytes = b"", headers: dict | None = None, *, until: int | None = None,
            timeout: float = 30) -> tuple[int, bytes]:
    """One request through the proxy on its own connection: (status, the body as it came, at
    least `until` bytes of it when given: then the connection is dropped)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, "/mcp", body=body or None, headers={"Content-Type": "application/json",
                                                                 "Accept": "application/json, text/event-stream",
                                                                 **(headers or {})})
        response = conn.getresponse()
        got = bytearray()
        while chunk := response.read1(65536):
            got += chunk
            if until is not None and len(got) >= until:
                break
        return response.status, bytes(got)
    finally:
        conn.close()


def hold(url: str, method: str, body: bytes) -> None:
    """A stream read until the proxy, stopping, cuts it off."""
    with contextlib.suppress(http.client.HTTPException, OSError, ValueError):
        request(url, method, body, timeout=60)


def frame_rows(db) -> list[tuple]:
    """(direction, length of raw, size, incomplete, the first bytes) of every frame, in order."""
    return rows(db, "SELECT direction, length(CAST(raw AS BLOB)), size, incomplete, "
                    "CAST(substr(CAST(raw AS BLOB), 1, 40) AS BLOB) FROM frames ORDER BY session_id, seq")


def cut(direction: str, whole: bytes) -> tuple:
    """The row of a frame stored cut at LIMIT."""
    return (direction, LIMIT, len(whole), 2, whole[:40])


def whole(direction: str, raw: bytes) -> tuple:
    return (direction, len(raw), len(raw), 0, raw[:40])


def test_gzip_bombs_and_a_huge_answer_through_the_proxy_pass_untouched_and_are_stored_cut_at_max_frame(tmp_path):
    """A POST body and a JSON answer, a few KB each on the wire and 6 MiB decoded, and a 6 MiB
    JSON answer (streamed past the proxy, not held): the wire carries them as they came, the
    database their first MiB, marked, with their full size, and the analysis says
    `frame-truncated`, not `parse-error`."""
    db = tmp_path / "proxy.db"
    packed = gzip.compress(BOMB_CALL, 9)
    call = b'{"jsonrpc":"2.0","id":8,"method":"bomb/answer"}'
    with upstream_and_proxy(db) as (upstream, proxy):
        assert request(proxy.url, "POST", packed, {"Content-Encoding": "gzip"}) == (200, PONG % 7)
        status, body = request(proxy.url, "POST", call)
        assert status == 200 and body == upstream.sent["bomb"]  # still compressed: as the upstream sent it
        big = b'{"jsonrpc":"2.0","id":9,"method":"big/answer"}'
        assert request(proxy.url, "POST", big) == (200, BIG_ANSWER)
        assert request(proxy.url, "POST", PING % 2) == (200, PONG % 2)
        assert proxy.stop() == 0, proxy.errors
    assert upstream.bodies[0] == packed  # the wire passed it as it came
    assert frame_rows(db) == [cut("c2s", BOMB_CALL), whole("s2c", PONG % 7), whole("c2s", call), cut("s2c", BOMB_ANSWER),
                        whole("c2s", big), cut("s2c", BIG_ANSWER), whole("c2s", PING % 2), whole("s2c", PONG % 2)]
    status, report = analyze_json(db)
    codes = [f["code"] for f in report["findings"]]
    assert codes.count("frame-truncated") == 3 and "parse-error" not in codes


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_an_sse_event_that_never_ends_is_stored_cut_holds_back_no_other_client_and_sigint_stops_within_5_s(
        tmp_path, method):
    """On a GET the stream's session is not known until its first event or endpoint: held at
    most tap.SCOUT_BYTES (addons/http/tap.py) on the event loop."""
    db = tmp_path / "proxy.db"
    call = b'{"jsonrpc":"2.0","id":1,"method":"stream/endless"}'
    streamed = 4 << 20
    with upstream_and_proxy(db) as (upstream, proxy):
        status, body = request(proxy.url, method, call if method == "POST" else b"", until=streamed)
        assert status == 200 and body.startswith(b"event: message\ndata: " + FIRST)
        held = threading.Thread(target=hold, args=(proxy.url, method, call if method == "POST" else b""), daemon=True)
        held.start()  # a second endless stream, open while the proxy stops
        for rid in range(10, 20):  # other clients, while the event goes on
            assert request(proxy.url, "POST", PING % rid) == (200, PONG % rid)
        pings = [whole(d, raw % rid) for rid in range(10, 20) for d, raw in (("c2s", PING), ("s2c", PONG))]
        wait_for(lambda: all(p in frame_rows(db) for p in pings), 30, "the other clients' frames stored meanwhile")
        began = time.monotonic()
        status = proxy.stop(timeout=30)
        stopped = time.monotonic() - began
        assert status == 0, proxy.errors
        assert stopped < STOP_S, stopped
    stored = frame_rows(db)
    events = [r for r in stored if r[0] == "s2c" and r[4].startswith(b'{"jsonrpc":"2.0","method":"n"')]
    assert events and all(r[1] == LIMIT and r[2] > LIMIT and r[3] == 2 for r in events), events
    assert any(r == whole("s2c", FIRST) for r in stored)
    assert all(p in stored for p in pings)


def test_a_stdio_line_longer_than_max_frame_passes_the_tee_whole_and_is_stored_cut(tmp_path):
    db = tmp_path / "tee.db"
    line = padded(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"', 3 << 20)
    echo = "import sys\nfor l in sys.stdin.buffer: sys.stdout.buffer.write(l); sys.stdout.buffer.flush()"
    wire = line + b"\n" + PING % 2 + b"\n"
    result = cli("record", "--db", str(db), "--max-frame", "1M", "--", sys.executable, "-c", echo,
                 input=wire, timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert hashlib.sha256(result.stdout).digest() == hashlib.sha256(wire).digest()  # the wire passed it whole
    assert sorted(frame_rows(db)) == sorted([cut("c2s", line), whole("c2s", PING % 2), cut("s2c", line),
                                       whole("s2c", PING % 2)])
    status, report = analyze_json(db)
    codes = [f["code"] for f in report["findings"]]
    assert codes.count("frame-truncated") == 2 and "parse-error" not in codes


def test_a_frame_stored_cut_is_exported_with_its_full_size_and_imports_as_the_same_cut_frame(tmp_path):
    db, log, again = tmp_path / "tee.db", tmp_path / "cut.jsonl", tmp_path / "again.db"
    line = padded(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"', 2 << 20)
    echo = "import sys\nfor l in sys.stdin.buffer: sys.stdout.buffer.write(l); sys.stdout.buffer.flush()"
    result = cli("record", "--db", str(db), "--max-frame", "1M", "--", sys.executable, "-c", echo,
                 input=line + b"\n", timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    exported = cli("export", "--db", str(db), "-o", str(log), timeout=60)
    assert exported.returncode == 0, exported.stderr.decode(errors="replace")
    imported = cli("import", "--db", str(again), str(log), timeout=60)  # the default limit: 128M
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    assert sorted(frame_rows(again)) == sorted(frame_rows(db)) == sorted([cut("c2s", line), cut("s2c", line)])


def test_max_frame_that_is_no_size_is_a_one_line_usage_error(tmp_path):
    result = cli("record", "--db", str(tmp_path / "x.db"), "--max-frame", "lots", "--", "true")
    err = result.stderr.decode(errors="replace")
    assert result.returncode == 2 and err.count("\n") == 1 and err.startswith("mcptap: error: --max-frame"), err


def _bomb_dump(path) -> None:
    """A dump, as `mitmdump -w` writes it (mitmproxy's FlowWriter): a POST whose body is a
    brotli bomb and whose answer is a gzip bomb, a few KB each, 6 MiB decoded."""
    f = tflow.tflow(resp=True)
    f.request.method, f.request.path = "POST", "/mcp"
    f.request.headers["content-type"] = "application/json"
    f.request.headers["content-encoding"] = "br"
    f.request.raw_content = brotli.compress(BOMB_CALL)
    f.response.headers.clear()
    f.response.headers["content-type"] = "application/json"
    f.response.headers["content-encoding"] = "gzip"
    f.response.headers["mcp-session-id"] = "abc"
    f.response.raw_content = gzip.compress(BOMB_ANSWER, 9)
    buffer = io.BytesIO()
    mitm_io.FlowWriter(buffer).add(f)
    path.write_bytes(buffer.getvalue())


def test_importing_a_dump_of_decompression_bombs_stores_each_frame_cut_at_max_frame(tmp_path):
    dump, db = tmp_path / "bombs.mitm", tmp_path / "import.db"
    _bomb_dump(dump)
    assert os.path.getsize(dump) < 64 << 10
    result = cli("import", "--db", str(db), "--max-frame", "1M", str(dump), timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert frame_rows(db) == [cut("c2s", BOMB_CALL), cut("s2c", BOMB_ANSWER)]
    assert os.path.getsize(db) < 4 * LIMIT


def test_the_sse_parser_scans_each_byte_once_and_keeps_at_most_the_limit_of_an_endless_event():
    parser = SSEParser(LIMIT)
    start = b"data: " + FIRST + b"\n\ndata: {"
    assert parser.feed(start) != []
    fed = len(start)
    block = b"x" * 4096
    for _ in range(BIG // len(block)):  # one line that never ends, fed in small chunks
        assert parser.feed(block) == []
        fed += len(block)
    assert parser.scanned == fed  # linear: the unfinished line is never scanned again
    assert parser.incomplete == (b"{" + BIG * b"x")[:LIMIT]
    assert parser.incomplete_size == BIG + 1
    (event,) = parser.feed(b"\r\n\r\n")
    assert (len(event.data), event.full_size) == (LIMIT, BIG + 1)


def test_importing_a_frame_log_with_a_frame_longer_than_max_frame_stores_it_cut(tmp_path):
    log, db = tmp_path / "big.jsonl", tmp_path / "import.db"
    line = padded(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"', 3 << 20)
    records = [{"session": "big", "seq": 1, "ts": 1.0, "direction": "c2s", "raw": line.decode()},
               {"session": "big", "seq": 2, "ts": 2.0, "direction": "s2c", "raw": (PONG % 1).decode()}]
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = cli("import", "--db", str(db), "--max-frame", "1M", str(log), timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert frame_rows(db) == [cut("c2s", line), whole("s2c", PONG % 1)]


@pytest.mark.parametrize("torn", [False, True])
def test_a_record_larger_than_the_readers_buffer_comes_out_whole_and_a_torn_one_is_dropped(torn):
    """The recorder processes read a large record (a frame of up to --max-frame) into a buffer
    of its own: whole, in order with the records around it, and dropped when the writer died
    mid-way."""
    from mcptap.addons.shipping.chunkwire import LARGE, RecordReader, chunk_header

    big = bytes(range(256)) * ((LARGE + (3 << 20)) // 256)
    data = (chunk_header("c2s", 0.5, 2) + b"ok" + chunk_header("s2c", 1.0, len(big)) + big
            + chunk_header("c2s", 2.0, 3) + b"end")
    if torn:
        data = data[:len(data) - 4096 - 12]
    r, w = os.pipe()

    def writer():
        with os.fdopen(w, "wb", buffering=0) as fh:
            for i in range(0, len(data), 100_003):
                fh.write(data[i:i + 100_003])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        got = [(kind, ts, bytes(payload)) for kind, ts, payload in RecordReader(r)]
    finally:
        thread.join()
        os.close(r)
    assert got == ([(0, 0.5, b"ok")] if torn else [(0, 0.5, b"ok"), (1, 1.0, big), (0, 2.0, b"end")])


class HalvesUpstream(RawServer):
    """One exchange, in halves: the request body is read as it comes (`got_half` once half of it
    is here), and the answer's second half is sent only once the test says `release`."""

    backlog = 4

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.body = b""
        self.got_half, self.release, self.done = threading.Event(), threading.Event(), threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        self.body = read_request(conn, on_half=self.got_half).body
        half = len(self.answer) // 2
        answer(conn, self.answer, send=half)
        assert self.release.wait(30), "the client never had the first half of the answer"
        conn.sendall(self.answer[half:])

    def _connection(self, conn: socket.socket) -> None:
        super()._connection(conn)  # its one exchange
        self.sock.close()
        self.done.set()


# alone: with the other worker's load beside it, the recorder process (SCHED_IDLE until the proxy stops)
# once needed more than the 20 s the proxy is given to stop
@pytest.mark.serial
def test_a_body_above_a_mib_passes_the_proxy_as_it_comes_and_is_stored_whole(tmp_path):
    """mitmproxy holds a body whole before it sends any of it on (and a copy on its way out);
    `mcptap proxy` streams one above tap.STREAM_AT (addons/http/tap.py), keeping what it stores as it passes:
    the upstream has half a 4 MiB request before the client sends the rest, the client half a
    4 MiB answer before the upstream sends the rest, and both frames are stored whole."""
    call = padded(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"pad":"', 4 << 20)
    answer = padded(b'{"jsonrpc":"2.0","id":3,"result":{"pad":"', 4 << 20)
    upstream = HalvesUpstream(answer)
    db = tmp_path / "proxy.db"
    with mcptap_proxy(db, f"http://127.0.0.1:{upstream.port}/mcp") as proxy:  # the default --max-frame
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as client:
            client.sendall(b"POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                           b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
                           % (proxy.url.removeprefix("http://").encode(), len(call), call[:len(call) // 2]))
            assert upstream.got_half.wait(30), "the proxy held the request body back"
            client.sendall(call[len(call) // 2:])
            got = b""
            while got.count(b"\r\n\r\n") == 0 or len(got.partition(b"\r\n\r\n")[2]) < len(answer) // 2:
                chunk = client.recv(1 << 20)
                assert chunk, got[:200]
                got += chunk
            upstream.release.set()
            while len(got.partition(b"\r\n\r\n")[2]) < len(answer):
                chunk = client.recv(1 << 20)
                assert chunk, len(got)
                got += chunk
        assert upstream.done.wait(30) and upstream.faults == []
        assert proxy.stop() == 0, proxy.errors
    assert upstream.body == call and got.partition(b"\r\n\r\n")[2] == answer
    assert frame_rows(db) == [whole("c2s", call), whole("s2c", answer)]
