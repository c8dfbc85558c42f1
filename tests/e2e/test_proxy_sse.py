"""SSE through `mcptap proxy` as direct: a stream's events (priming events with an id and an empty
`data`, `retry`) and its end reach the client as the server sent them, so a real client resumes
a stream the server ended with the `Last-Event-ID` and after the `retry` it was given (the
official conformance suite's `sse-retry`, SEP-1699), and every event a client read is stored
even when it disconnects the moment it has read it. The server is tests/tools/sse_retry_server.py,
the client the `mcp` SDK's (side environment) or a raw socket."""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
import threading
import urllib.request
from collections import Counter

import pytest

from tests.conftest import tool
from tests.support.http_helpers import free_port, http_messages, http_server, mcptap_proxy, recorded_exchanges, sdk_client, sse_data

RETRY_MS = 1500  # above the SDKs' own default delay (1 s): a client that missed `retry` comes too early
EARLY_TOLERANCE_S = 0.05  # the suite's


def sse_server(retry_ms: int = RETRY_MS):
    port = free_port()
    return http_server([sys.executable, tool("sse_retry_server.py"), str(port), str(retry_ms)], port)


def server_log(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/log", timeout=10) as answer:
        return json.load(answer)


@pytest.mark.parametrize("through", ["direct", "proxy"])
def test_a_client_resumes_the_stream_the_server_ended_with_its_last_event_id_after_the_retry_it_was_given(
        sdk_python, tmp_path, through):
    db = tmp_path / "rec.db"
    with sse_server() as upstream:
        if through == "proxy":
            with mcptap_proxy(db, f"{upstream}/mcp") as proxy:
                out = sdk_client(sdk_python, "legacy", "streamable", f"{proxy.url}/mcp", "resume")
                assert proxy.stop() == 0, proxy.errors
        else:
            out = sdk_client(sdk_python, "legacy", "streamable", f"{upstream}/mcp", "resume")
        log = server_log(upstream)
    assert out["resume"] == "resumed"
    resumed = [(at, last) for at, last in log["gets"] if last is not None]
    assert resumed, log
    at, last = resumed[0]
    assert last == log["primed"]  # the priming event of the call's own stream
    assert at - log["closed_at"] >= RETRY_MS / 1000 - EARLY_TOLERANCE_S, log
    if through == "proxy":
        conn = sqlite3.connect(db)
        stored = [json.loads(raw) for (raw,) in conn.execute("SELECT raw FROM frames WHERE direction = 's2c'")]
        conn.close()
        assert any(frame.get("result", {}).get("content") == [{"type": "text", "text": "resumed"}] for frame in stored)


def post(port: int, body: dict) -> bytes:
    data = json.dumps(body).encode()
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: sse-retry-session\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (port, len(data), data))


def call(port: int, name: str, ident: int = 1) -> bytes:
    return post(port, {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name, "arguments": {}}})


def read_answer(port: int, request: bytes, *, until: bytes = b"0\r\n\r\n", timeout: float = 20) -> bytes:
    """The bytes answering `request` on a new connection, read until `until` is among them; the
    connection is then closed at once (a reset: nothing more is read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        got = b""
        while until not in got:
            chunk = sock.recv(65536)
            assert chunk, f"the connection ended before {until!r}: {got[-300:]!r}"
            got += chunk
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return got


def answer_of(request: bytes, received: bytes) -> dict:
    [(_, response)] = http_messages({"c2s": bytearray(request), "s2c": bytearray(received)})
    return response


def test_an_ended_stream_reaches_the_client_byte_for_byte_and_ends_there_too(tmp_path):
    with sse_server() as upstream:
        port = int(upstream.rsplit(":", 1)[1])
        direct = answer_of(call(port, "resume"), read_answer(port, call(port, "resume")))
        with mcptap_proxy(tmp_path / "rec.db", f"{upstream}/mcp") as proxy:
            proxied_port = int(proxy.url.rsplit(":", 1)[1])
            request = call(proxied_port, "resume")
            proxied = answer_of(request, read_answer(proxied_port, request))  # bounded: its end came
    assert direct["body"] == b"id: prime-1\nretry: %d\ndata: \n\n" % RETRY_MS
    assert proxied["body"] == direct["body"].replace(b"prime-1", b"prime-2")  # the server's next id
    assert proxied["headers"]["content-type"] == "text/event-stream"


@pytest.mark.serial
def test_every_event_read_is_stored_when_the_client_disconnects_at_once_200_times_under_load(tmp_path):
    db = tmp_path / "rec.db"
    runs, workers = 200, 8
    received: list[tuple[str, bytes]] = []
    failures: list[BaseException] = []
    with sse_server() as upstream, mcptap_proxy(db, f"{upstream}/mcp") as proxy:
        port = int(proxy.url.rsplit(":", 1)[1])

        def work(first: int) -> None:
            try:
                for ident in range(first, runs, workers):
                    name = ("burst", "burst-end")[ident % 2]  # its stream held open, or ended at once
                    received.append((name, read_answer(port, call(port, name, ident), until=b'"burst"}]}}\n\n')))
            except BaseException as exc:  # noqa: BLE001 - said by the test below
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(first,)) for first in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not failures, failures[0]
        assert proxy.stop() == 0, proxy.errors
    assert len(received) == runs
    wire: Counter = Counter()
    for name, got in received:
        body = got.split(b"\r\n\r\n", 1)[1]
        events = sse_data(b"".join(body.split(b"\r\n")[1::2]))  # the chunks' data
        ident = json.loads(events[-1])["id"]
        request = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                              "params": {"name": name, "arguments": {}}}).encode()
        wire[(("c2s", request), *(("s2c", event) for event in events))] += 1
    assert len(wire) == runs and all(len(frames) == 3 for frames in wire)  # the call, a progress, the result
    assert recorded_exchanges(db) == wire
