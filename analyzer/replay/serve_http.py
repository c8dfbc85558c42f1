"""`mcptap serve --listen`: a recorded session served over Streamable HTTP (MCP basic/transports):
one POST per client message, an answer as JSON or as an event stream of the request's frames; an
unanswered request keeps its stream open until it is cancelled (a `notifications/cancelled`
POST, or, as 2026-07-28 says, the client closing the stream), its session ends or serve stops.
A request whose Host or Origin is not local (analyzer/origins.py: DNS rebinding) is refused, and a
POST whose Content-Type is not application/json gets 415, and one whose Content-Length is past
`--max-body` (DEFAULT_MAX_BODY) gets 413, before anything is read of its body."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcptap.errors import MCPTapError
from mcptap.origins import CONTENT_TYPE_REFUSED, ListenerPolicy, is_json
from mcptap.analysis.outstanding import Held, Outstanding
from mcptap.replay.responder import (DEFAULT_MAX_BODY, INVALID_REQUEST, Reply, Responder, batch_answer, error_frame,
                                     read_frame)



class _Handler(BaseHTTPRequestHandler):
    server: "StubHttpServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def _refused(self, *, post: bool = False) -> bool:
        """Answer a request that is not to be served (a foreign Host or Origin; a POST that is
        not JSON) with its refusal, closing the connection (its body is never read)."""
        refusal = self.server.policy.check(self.headers.get_all("Host") or [], self.headers.get_all("Origin") or [])
        if refusal is None and post and not is_json(self.headers.get("Content-Type")):
            refusal = CONTENT_TYPE_REFUSED
        if refusal is None:
            return False
        self.close_connection = True
        self._json(refusal.status, refusal.body, {"Connection": "close"})
        return True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if self._refused(post=True):
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._json(400, error_frame(None, INVALID_REQUEST, "Invalid Request: a body of a known, bounded length"),
                       {"Connection": "close"})
            self.close_connection = True
            return
        if length > self.server.max_body:
            self._json(413, error_frame(None, INVALID_REQUEST, f"Request body too large: {length} bytes, more than "
                                        f"the {self.server.max_body} that mcptap serve --max-body allows"),
                       {"Connection": "close"})
            self.close_connection = True
            return
        raw = self.rfile.read(length)
        started = time.monotonic()
        incoming = read_frame(raw)
        if incoming.immediate is not None:
            self._json(400, incoming.immediate)
            return
        session = self.headers.get("Mcp-Session-Id")
        for ident in incoming.cancelled:
            self.server.outstanding.cancel(session, ident)
        if not incoming.requests:
            self._empty(202)
            return
        headers = {}
        responder = self.server.responder(session)
        if any(r.get("method") == "initialize" for r in incoming.requests) and responder.has_handshake:
            session = uuid.uuid4().hex
            headers["Mcp-Session-Id"] = session
            responder = self.server.responder(session, new=True)
        replies = [responder.reply(r) for r in incoming.requests]
        if incoming.batch:
            self._json(200, batch_answer(replies), headers)
            return
        ident = incoming.requests[0].get("id")
        held = self.server.outstanding.hold(session, ident)
        try:
            kept = self._send(replies[0], started, headers, held)
            self.close_connection = self.close_connection or not kept  # the client's Connection: close too
        except OSError:  # the client went away
            self.close_connection = True
        finally:
            self.server.outstanding.release(session, ident, held)

    def _send(self, reply: Reply, started: float, headers: dict, held: Held) -> bool:
        """One request's reply: JSON for a lone answer, else an event stream of its frames, kept
        open after them while the request goes unanswered; whatever ends the request first (its
        cancel, the client closing the stream, the server stopping) ends it with nothing more sent.
        True when the connection can take the client's next request."""
        if reply.dropped:
            held.wait(None, self.connection)  # never answered, not even with headers
            return False
        if reply.answered and len(reply.frames) == 1:
            delay, frame = reply.frames[0]
            if not held.wait(started + delay - time.monotonic(), self.connection):
                return False
            self._json(200, frame, headers)
            return True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for delay, frame in reply.frames:
            if not held.wait(started + delay - time.monotonic(), self.connection):
                return False
            self.wfile.write(b"event: message\ndata: " + frame + b"\n\n")
            self.wfile.flush()
        if not reply.answered:
            held.wait(None, self.connection)
        return False  # the stream ends with the connection

    def do_GET(self) -> None:  # noqa: N802
        if self._refused():
            return
        self._empty(405, {"Allow": "POST, DELETE"})  # no standalone stream: nothing unprompted to say

    def do_DELETE(self) -> None:  # noqa: N802
        if self._refused():
            return
        self.server.end_session(self.headers.get("Mcp-Session-Id"))
        self._empty(200)

    def _json(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _empty(self, status: int, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()


class StubHttpServer(ThreadingHTTPServer):
    """Serves a recording: each session (an `Mcp-Session-Id` it issued at initialize) is matched
    from the recording's start; requests without one (2026-07-28 has no sessions) share one matching."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], responder: Responder, policy: ListenerPolicy | None = None,
                 max_body: int = DEFAULT_MAX_BODY):
        super().__init__(address, _Handler)
        self.max_body = max_body
        self.policy = policy or ListenerPolicy(address[0])
        self.shared = responder
        self.outstanding = Outstanding()
        self._sessions: dict[str, Responder] = {}
        self._lock = threading.Lock()

    def responder(self, session: str | None, *, new: bool = False) -> Responder:
        with self._lock:
            if new:
                self._sessions[session] = Responder(self.shared.recording, self.shared.faults)
            return self._sessions.get(session, self.shared)

    def end_session(self, session: str | None) -> None:
        if session is not None:
            with self._lock:
                self._sessions.pop(session, None)
            self.outstanding.end(session)

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client gone mid-request is no error of ours
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/mcp"

    def stop(self) -> None:
        self.outstanding.end(stop=True)
        self.shutdown()
        self.server_close()


def serve_http(responder: Responder, host: str, port: int, on_ready: Callable[[str], None] | None = None,
               allow_origins: Sequence[str] = (), max_body: int = DEFAULT_MAX_BODY) -> int:
    """Serve until SIGINT or SIGTERM; `on_ready(url)` once listening; `allow_origins`: the
    `--allow-origin` values (analyzer/origins.py); `max_body`: the largest request body read."""
    import signal

    policy = ListenerPolicy(host, allow_origins)
    try:
        server = StubHttpServer((host, port), responder, policy, max_body)
    except OSError as exc:
        raise MCPTapError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        if on_ready is not None:
            on_ready(server.url)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        if not stop.is_set():  # stopped by an error: the caller's handlers again
            for s, handler in previous.items():
                signal.signal(s, handler)
        # stopped by a signal, ours stay: a second SIGTERM or Ctrl-C while the process ends repeats
        # the request (a service manager's, a user's), it does not kill the process with its status lost
    return 0
