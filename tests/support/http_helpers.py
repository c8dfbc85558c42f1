"""Test instruments for HTTP capture: real SDK servers on free ports, `mcptap proxy` as a
subprocess, and a byte-logging TCP relay put between the client and the proxy, whose log is
the oracle for what the client really sent and received (parsed here with a small HTTP/1.1
reader of its own, independent of mitmproxy and of the product's SSE parser)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import mcptap, tool, wait_for

START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepting(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


@contextlib.contextmanager
def sdk_http_server(sdk_python: str, mode: str):
    """The SDK test server (tests/tools/sdk_http_server.py) in `mode`; yields its base URL."""
    port = free_port()
    with http_server([sdk_python, tool("sdk_http_server.py"), mode, str(port)], port) as url:
        yield url


@contextlib.contextmanager
def http_server(argv: list[str], port: int, env: dict | None = None):
    """A server process that listens on 127.0.0.1:`port`; yields its base URL."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})
    try:
        wait_for(lambda: accepting(port) or proc.poll() is not None, START_TIMEOUT_S, f"{argv[1]} to listen")
        assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


@contextlib.contextmanager
def mitmdump_reverse(upstream: str, *extra: str):
    """mitmdump itself (this interpreter's) in reverse mode in front of `upstream` (see mitmdump)."""
    with mitmdump(f"reverse:{upstream}", *extra) as outcome:
        yield outcome


@contextlib.contextmanager
def mitmdump(mode: str, *extra: str):
    """mitmdump itself (this interpreter's) in `mode` (`regular`, `reverse:URL`, ...); yields its
    port and stops it with SIGINT, the way a user would, giving its exit status to `status`."""
    import signal
    import sys

    port = free_port()
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "mitmdump"), "-q", "--mode",
                             mode, "--listen-host", "127.0.0.1", "--listen-port", str(port), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    outcome = {"port": port}
    try:
        wait_for(lambda: accepting(port) or proc.poll() is not None, START_TIMEOUT_S, "mitmdump to listen")
        assert proc.poll() is None, f"mitmdump exited {proc.returncode} before listening: " + \
            proc.stderr.read().decode(errors="replace")[-2000:]
        yield outcome
    finally:
        proc.send_signal(signal.SIGINT)
        outcome["status"] = proc.wait(30)
        outcome["errors"] = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()


_LISTENING = re.compile(rb"listening on http://([^/]+)/")


@dataclass
class Proxy:
    proc: subprocess.Popen
    url: str
    stderr: list[bytes] = field(default_factory=list)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    @property
    def errors(self) -> str:
        return b"".join(self.stderr).decode(errors="replace")


@contextlib.contextmanager
def mcptap_proxy(db: Path | str, upstream: str, *extra: str):
    """`mcptap proxy --listen 127.0.0.1:0`; yields a Proxy once it says where it listens."""
    proc = subprocess.Popen(mcptap("proxy", "--db", str(db), "--upstream", upstream, "--listen", "127.0.0.1:0", *extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: list[bytes] = []
    found: dict[str, str] = {}

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            m = _LISTENING.search(line)
            if m and "url" not in found:
                found["url"] = "http://" + m.group(1).decode()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proxy = Proxy(proc, "", lines)
    try:
        wait_for(lambda: "url" in found or proc.poll() is not None, START_TIMEOUT_S, "mcptap proxy to listen")
        assert "url" in found, b"".join(lines).decode(errors="replace")
        proxy.url = found["url"]
        yield proxy
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(5)
        proc.stderr.close()


# -- the relay ---------------------------------------------------------------------------------

class Relay:
    """A TCP relay on 127.0.0.1 that logs every connection's bytes each way."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections: list[dict[str, bytearray]] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            log = {"c2s": bytearray(), "s2c": bytearray()}
            self.connections.append(log)
            for src, dst, buf in ((client, upstream, log["c2s"]), (upstream, client, log["s2c"])):
                t = threading.Thread(target=self._pump, args=(src, dst, buf), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, buf: bytearray) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                buf += chunk
                dst.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed = True
        self.sock.close()
        for t in self._threads:
            t.join(10)
        for sock in self._sockets:
            sock.close()


# -- reading the relay's log -------------------------------------------------------------------

def _headers(block: bytes) -> tuple[bytes, dict[str, str]]:
    first, *lines = block.split(b"\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode()] = value.strip().decode()
    return first, headers


def _body(data: bytes, pos: int, headers: dict[str, str], *, until_close: bool) -> tuple[bytes, int]:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out = bytearray()
        while True:
            eol = data.index(b"\r\n", pos)
            size = int(data[pos:eol].split(b";")[0], 16)
            pos = eol + 2
            if size == 0:
                end = data.index(b"\r\n\r\n", pos - 2) + 4 if data[pos:pos + 2] != b"\r\n" else pos + 2
                return bytes(out), end
            out += data[pos:pos + size]
            pos += size + 2
    if "content-length" in headers:
        n = int(headers["content-length"])
        return data[pos:pos + n], pos + n
    if until_close:
        return data[pos:], len(data)
    return b"", pos


def http_messages(connection: dict[str, bytearray]) -> list[tuple[dict, dict]]:
    """The (request, response) pairs of one logged connection; each a dict with method or
    status, headers and body (a response cut short keeps what came)."""
    c2s, s2c = bytes(connection["c2s"]), bytes(connection["s2c"])
    pairs = []
    cpos = spos = 0
    while cpos < len(c2s):
        end = c2s.index(b"\r\n\r\n", cpos)
        first, headers = _headers(c2s[cpos:end])
        body, cpos = _body(c2s, end + 4, headers, until_close=False)
        request = {"method": first.split()[0].decode(), "target": first.split()[1].decode(), "headers": headers,
                   "body": body}
        response = None
        if spos < len(s2c):
            end = s2c.find(b"\r\n\r\n", spos)
            if end >= 0:
                first, rheaders = _headers(s2c[spos:end])
                try:
                    rbody, spos = _body(s2c, end + 4, rheaders, until_close=True)
                except ValueError:  # a stream cut short
                    rbody, spos = _chunked_prefix(s2c, end + 4), len(s2c)
                response = {"status": int(first.split()[1]), "headers": rheaders, "body": rbody}
        pairs.append((request, response))
    return pairs


def _chunked_prefix(data: bytes, pos: int) -> bytes:
    out = bytearray()
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return bytes(out)
        size = int(data[pos:eol].split(b";")[0], 16)
        out += data[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2
        if size == 0 or pos > len(data):
            return bytes(out)


def sse_data(body: bytes) -> list[bytes]:
    """The data of each event with data, endpoint events left out (what is a JSON-RPC frame)."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        kind = [line[6:].strip() for line in block.split(b"\n") if line.startswith(b"event:")]
        if data and (not kind or kind[0] != b"endpoint"):
            joined = b"\n".join(data)
            if joined:
                out.append(joined)
    return out


def wire_exchanges(relay: Relay) -> Counter:
    """Each HTTP exchange's frames as the client saw them: (request body, *answer frames)."""
    found: Counter = Counter()
    for connection in relay.connections:
        for request, response in http_messages(connection):
            frames = [("c2s", request["body"])] if request["method"] == "POST" and request["body"] else []
            if response is not None:
                ctype = response["headers"].get("content-type", "")
                if ctype.startswith("text/event-stream"):
                    frames += [("s2c", d) for d in sse_data(response["body"])]
                elif "json" in ctype and response["body"]:
                    frames.append(("s2c", response["body"]))
            if frames:
                found[tuple(frames)] += 1
    return found


def recorded_exchanges(db: Path | str) -> Counter:
    import sqlite3

    conn = sqlite3.connect(db)
    found: Counter = Counter()
    by_exchange: dict[str, list] = {}
    for exchange_id, direction, raw in conn.execute(
            "SELECT exchange_id, direction, CAST(raw AS BLOB) FROM frames ORDER BY session_id, seq"):
        by_exchange.setdefault(exchange_id, []).append((direction, raw))
    conn.close()
    for frames in by_exchange.values():
        found[tuple(frames)] += 1
    return found


def sdk_client(sdk_python: str, mode: str, transport: str, url: str, *what: str, timeout: float = 90) -> dict:
    import json

    result = subprocess.run([sdk_python, tool("sdk_http_client.py"), mode, transport, url, *what],
                            capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    return json.loads(result.stdout.splitlines()[-1])
