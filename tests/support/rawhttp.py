"""HTTP/1.1 on raw sockets, for the tests that need a server (or a client) to misbehave on purpose:
`RawServer` listens on 127.0.0.1 and hands each connection to its `serve` in a thread of its own,
keeping what a handler raises in `faults` (the test asserts it is empty); `read_request`,
`answer`, `stream_head` and `chunk` are the pieces of the exchange; `post` is a client's one POST."""

from __future__ import annotations

import re
import socket
import threading
from typing import NamedTuple

TIMEOUT_S = 30


class Request(NamedTuple):
    head: bytes
    fields: dict[bytes, bytes]
    """Header names in lower case, values stripped."""
    body: bytes


def read_request(conn: socket.socket, *, on_half: threading.Event | None = None) -> Request | None:
    """One request off `conn`, its body read whole (by Content-Length); None when the peer closed
    before a head came. `on_half` is set once half of the body is in."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk_ = conn.recv(65536)
        if not chunk_:
            return None
        data += chunk_
    head, _, body = data.partition(b"\r\n\r\n")
    fields = {line.split(b":")[0].strip().lower(): line.partition(b":")[2].strip()
              for line in head.split(b"\r\n")[1:]}
    length = int(fields.get(b"content-length", b"0"))
    while len(body) < length:
        if on_half is not None and len(body) >= length // 2:
            on_half.set()
        more = conn.recv(65536)
        if not more:
            break
        body += more
    return Request(head, fields, body)


def answer(conn: socket.socket, body: bytes, *, status: bytes = b"200 OK", ctype: bytes = b"application/json",
           headers: bytes = b"", send: int | None = None) -> None:
    """A whole answer with Content-Length and `Connection: close` (`headers`: more lines, each
    ending in CRLF); `send` cuts what goes out after that many bytes of the body."""
    conn.sendall(b"HTTP/1.1 %s\r\nContent-Type: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (status, ctype, headers, len(body), body if send is None else body[:send]))


def stream_head(conn: socket.socket) -> None:
    """The head of an SSE answer in chunks; then `chunk` each piece."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")


def chunk(conn: socket.socket, data: bytes) -> None:
    conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))


class RawServer:
    """A server on 127.0.0.1 (`port` 0: any free one, in `self.port`); each connection runs
    `serve(conn)` (to be written by a subclass) in its own thread and is closed after it.
    `quiet_resets`: a peer that goes away mid-answer is no fault."""

    backlog = 16
    quiet_resets = False

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(self.backlog)
        self.port = self.sock.getsockname()[1]
        self.faults: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._connection, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _connection(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(TIMEOUT_S)
            self.serve(conn)
        except (BrokenPipeError, ConnectionResetError) as exc:
            if not self.quiet_resets:
                self.faults.append(exc)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.faults.append(exc)
        finally:
            conn.close()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self, join: float = 10) -> None:
        self.sock.close()
        for thread in self._threads:
            thread.join(join)


def post(port: int, body: bytes, *, send_body: bool = True) -> tuple[int, bytes]:
    """One POST to /mcp on a raw socket: (status, response body). With `send_body` False only the
    head goes out (a client that waits for the verdict before sending, as `Expect: 100-continue` does)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        sock.sendall(head + body if send_body else head)
        data = b""
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                break
            data += more
        head_text, _, rest = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head_text).group(1))
        while len(rest) < length:
            more = sock.recv(65536)
            if not more:
                break
            rest += more
        return int(head_text.split()[1]), rest
