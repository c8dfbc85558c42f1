"""`mcptap serve`: act as the server of a recorded session for a live client (a host under
test), over stdio or Streamable HTTP.

Each client request is matched to a recorded one: first by method and params exactly (`_meta`
left out: progress tokens and client info differ from run to run; a repeated call gets the same
answer again), then by method in recorded order; once every recorded request of a method has
been used, the last one used answers again.
The answer is the recorded response under the live request's id, preceded by the server
notifications the recording had while that request ran (a progress notification carries the
live request's progress token, and is left out when the live request asked for none). A ping
with nothing recorded gets `{}`; any other request with nothing recorded gets a JSON-RPC
error, never silence.

For testing hosts: pacing at the recorded latency, and faults by method (drop: never answer;
delay: answer late; corrupt: answer with the recorded frame cut in half, which is not JSON)."""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO, Callable

from mcp_types import jsonrpc

from analyzer import jsonwire, script
from analyzer.classify import NOTIFICATION, REQUEST, classify
from analyzer.errors import MCPTapError

UNKNOWN_METHOD, PARSE_ERROR, INVALID_REQUEST = jsonrpc.METHOD_NOT_FOUND, jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST
ANY_METHOD = "*"
MAX_DELAY_S = 86_400.0
MAX_BODY_BYTES = 1 << 30


@dataclass
class Faults:
    drop: set[str] = field(default_factory=set)  # methods never answered
    delay: dict[str, float] = field(default_factory=dict)  # method -> extra seconds before answering
    corrupt: set[str] = field(default_factory=set)  # methods answered with a broken frame
    pace: bool = False  # wait the recorded latency before each answer

    @staticmethod
    def _hit(methods, method: str) -> bool:
        return method in methods or ANY_METHOD in methods

    def extra_delay(self, method: str) -> float:
        return self.delay.get(method, self.delay.get(ANY_METHOD, 0.0))


def parse_delays(items) -> dict[str, float]:
    """`METHOD=SECONDS` items (METHOD may be `*`) as a dict; ValueError names a bad one."""
    out = {}
    for item in items:
        method, sep, seconds = item.rpartition("=")
        try:
            value = float(seconds)
        except ValueError:
            value = -1.0
        if not sep or not method or not 0 <= value <= MAX_DELAY_S:
            raise ValueError(f"--delay takes METHOD=SECONDS (METHOD may be *), not {item!r}")
        out[method] = value
    return out


@dataclass
class Reply:
    """What to send for one request: frames with the delay before each (seconds from the
    request), or nothing at all (`dropped`)."""

    frames: list[tuple[float, bytes]] = field(default_factory=list)
    dropped: bool = False
    matched: str = ""  # how the request was matched: exact | method | reused | builtin | none


class Responder:
    """Recorded answers for live requests (thread-safe)."""

    def __init__(self, recorded: script.Script, faults: Faults | None = None):
        self.faults = faults or Faults()
        self.script = recorded
        self.entries = [m for m in recorded.messages(script.C2S, REQUEST) if m.answer is not None]
        self._keys = {id(e): _canonical_params(e.params) for e in self.entries}
        self.used: set[int] = set()
        self._last_exact: dict[tuple, script.Message] = {}
        self._last_method: dict[str, script.Message] = {}
        self._lock = threading.Lock()
        self.has_handshake = any(m.method == "initialize" for m in self.entries)
        from analyzer.redact import FrameRedactor

        self._redactor = FrameRedactor()  # live params as a recording would hold them, for matching

    def reply(self, request: dict) -> Reply:
        method = request.get("method")
        with self._lock:
            entry, how = self._match(method, _canonical_params(self._as_recorded(request.get("params"))))
        if self.faults._hit(self.faults.drop, method):
            return Reply(dropped=True, matched=how)
        if entry is None:
            if method == "ping":
                return Reply([(0.0, _encode({"jsonrpc": "2.0", "id": request.get("id"), "result": {}}))], matched="builtin")
            return Reply([(0.0, error_frame(request.get("id"), UNKNOWN_METHOD,
                                            f"mcptap serve: the recording has no answer to {method}"))], matched="none")
        frames = self._frames(entry, request)
        extra = self.faults.extra_delay(method)
        if not self.faults.pace:
            frames = [(0.0, raw) for _, raw in frames]
        frames = [(delay + extra, raw) for delay, raw in frames]
        if self.faults._hit(self.faults.corrupt, method):
            delay, raw = frames[-1]
            frames[-1] = (delay, raw[: max(1, len(raw) // 2)])
        return Reply(frames, matched=how)

    def _as_recorded(self, params: Any) -> Any:
        """Params with credential members replaced as the recorder replaced them (same key,
        same hash), so that a call with a password matches its recorded, redacted self."""
        raw = _encode(params)
        redacted, paths = self._redactor.frame(raw)
        return params if paths is None else jsonwire.parse(redacted).value

    def _match(self, method: Any, params: str) -> tuple[script.Message | None, str]:
        """The recorded request to answer with: the same method and params (unused first, else
        the last one used: a repeated call gets the same answer), then the next unused one of
        the method in recorded order, else the last one of the method used."""
        key = (method, params)
        for entry in self.entries:
            if id(entry) not in self.used and entry.method == method and self._keys[id(entry)] == params:
                return self._use(entry), "exact"
        if key in self._last_exact:
            return self._last_exact[key], "exact"
        for entry in self.entries:
            if id(entry) not in self.used and entry.method == method:
                return self._use(entry), "method"
        entry = self._last_method.get(method)
        return entry, "reused" if entry is not None else "none"

    def _use(self, entry: script.Message) -> script.Message:
        self.used.add(id(entry))
        self._last_exact[(entry.method, self._keys[id(entry)])] = entry
        self._last_method[entry.method] = entry
        return entry

    def _frames(self, entry: script.Message, request: dict) -> list[tuple[float, bytes]]:
        out: list[tuple[float, bytes]] = []
        token = _progress_token(request.get("params"))
        for note in entry.during:
            value = note.value
            if note.method == "notifications/progress":
                if token is _NONE:
                    continue
                if type(value.get("params")) is dict:
                    value = {**value, "params": {**value["params"], "progressToken": token}}
            out.append((max(0.0, note.ts - entry.ts), _encode(value)))
        answer = {**entry.answer.value, "id": request.get("id")}
        out.append((max(0.0, entry.answer.ts - entry.ts), _encode(answer)))
        return out


_NONE = object()


def _progress_token(params: Any) -> Any:
    meta = params.get("_meta") if type(params) is dict else None
    return meta["progressToken"] if type(meta) is dict and "progressToken" in meta else _NONE


def _canonical_params(params: Any) -> str:
    if type(params) is dict:
        params = {k: v for k, v in params.items() if k != "_meta"}
    try:
        return _canonical(params)
    except RecursionError:  # nested past the interpreter's stack: matched by method only
        return "<nested too deep>"


def _canonical(value: Any) -> str:
    if type(value) is dict:
        return "{" + ",".join(f"{json.dumps(k)}:{_canonical(value[k])}" for k in sorted(value)) + "}"
    if type(value) is list:
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    return jsonwire.to_json(value)


def _encode(value: Any) -> bytes:
    return jsonwire.to_json(value).encode("utf-8", "surrogatepass")


def error_frame(ident: Any, code: int, message: str) -> bytes:
    return _encode({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def requests_in(raw: bytes) -> tuple[list[dict], bytes | None, bool]:
    """The requests one frame from the client carries, a frame to answer at once (a parse or
    structure error), and whether it was a batch."""
    parsed = jsonwire.parse(raw)
    if parsed.error is not None:
        return [], error_frame(None, PARSE_ERROR, f"Parse error: {parsed.error}"), False
    batch = type(parsed.value) is list
    values = parsed.value if batch else [parsed.value]
    requests = []
    for value in values:
        kind = classify(value)[1]
        if kind == REQUEST:
            requests.append(value)
        elif kind != NOTIFICATION and not (type(value) is dict and ("result" in value or "error" in value)):
            return requests, error_frame(None, INVALID_REQUEST, "Invalid Request"), batch
    return requests, None, batch


# -- stdio ------------------------------------------------------------------------------------------

def serve_stdio(responder: Responder, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer frames from `stdin` on `stdout` until stdin ends; answers that wait (pacing,
    delay) are sent from threads of their own so that other requests are not held up."""
    lock = threading.Lock()
    pending: list[threading.Thread] = []

    def write(raw: bytes) -> None:
        with lock:
            try:
                stdout.write(raw + b"\n")
                stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass

    def send(reply: Reply, started: float) -> None:
        for delay, raw in reply.frames:
            wait = started + delay - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            write(raw)

    for line in stdin:
        raw = line[:-1] if line.endswith(b"\n") else line
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        started = time.monotonic()
        requests, immediate, batch = requests_in(raw)
        if immediate is not None:
            write(immediate)
            continue
        if batch:
            replies = [responder.reply(r) for r in requests]
            answers = [json.loads(r.frames[-1][1]) for r in replies if not r.dropped and _is_json(r.frames[-1][1])]
            if answers:
                write(_encode(answers))
            continue
        for request in requests:
            reply = responder.reply(request)
            if reply.dropped:
                continue
            if any(delay > 0 for delay, _ in reply.frames):
                thread = threading.Thread(target=send, args=(reply, started), daemon=True)
                pending.append(thread)
                thread.start()
            else:
                send(reply, started)
    for thread in pending:
        thread.join()
    return 0


def _is_json(raw: bytes) -> bool:
    return jsonwire.parse(raw).error is None


# -- Streamable HTTP --------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    server: "StubHttpServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self._json(400, error_frame(None, INVALID_REQUEST, "Invalid Request: a body of a known, bounded length"),
                       {"Connection": "close"})
            self.close_connection = True
            return
        raw = self.rfile.read(length)
        started = time.monotonic()
        requests, immediate, batch = requests_in(raw)
        if immediate is not None:
            self._json(400, immediate)
            return
        if not requests:
            self._empty(202)
            return
        headers = {}
        if any(r.get("method") == "initialize" for r in requests) and self.server.responder.has_handshake:
            headers["Mcp-Session-Id"] = uuid.uuid4().hex
        replies = [self.server.responder.reply(r) for r in requests]
        if batch:
            answers = [json.loads(r.frames[-1][1]) for r in replies if not r.dropped and _is_json(r.frames[-1][1])]
            self._json(200, _encode(answers), headers)
            return
        reply = replies[0]
        if reply.dropped:
            self.server.stopping.wait()  # never answered; the connection ends with the server
            return
        if len(reply.frames) == 1:
            self._sleep_until(started + reply.frames[0][0])
            self._json(200, reply.frames[0][1], headers)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for delay, frame in reply.frames:
                self._sleep_until(started + delay)
                self.wfile.write(b"event: message\ndata: " + frame + b"\n\n")
                self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self._empty(405, {"Allow": "POST, DELETE"})  # no standalone stream: nothing unprompted to say

    def do_DELETE(self) -> None:  # noqa: N802
        self._empty(200)

    def _sleep_until(self, when: float) -> None:
        wait = when - time.monotonic()
        if wait > 0:
            self.server.stopping.wait(wait)

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
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], responder: Responder):
        super().__init__(address, _Handler)
        self.responder = responder
        self.stopping = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/mcp"

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


def serve_http(responder: Responder, host: str, port: int, on_ready: Callable[[str], None] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; `on_ready(url)` once listening."""
    import signal

    try:
        server = StubHttpServer((host, port), responder)
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
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0


def serve(db_path: str, ref: str, *, listen: str | None = None, faults: Faults | None = None,
          on_ready: Callable[[str], None] | None = None) -> int:
    """Load the session and serve it: on stdin/stdout, or on HTTP at `listen` ([HOST:]PORT)."""
    from analyzer import store
    from analyzer.proxy import parse_listen

    conn = store.open_existing(db_path)
    try:
        recorded = script.load(conn, ref)
    finally:
        conn.close()
    responder = Responder(recorded, faults)
    if listen is None:
        return serve_stdio(responder, sys.stdin.buffer, sys.stdout.buffer)
    host, port = parse_listen(listen)
    return serve_http(responder, host, port, on_ready)
