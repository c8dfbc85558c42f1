"""What `mcptap serve` answers, whatever the transport: a live request matched to a recorded one,
and the recorded frames that answer it (`Responder`, `Reply`), with faults and pacing (`Faults`);
a client frame read (`read_frame`) and the answers written (`error_frame`, `batch_answer`).
Served over stdio by analyzer/replay/serve.py, over Streamable HTTP by serve_http.py.

Each client request is matched to a recorded one: first by method and params exactly (`_meta`
left out: progress tokens and client info differ from run to run), an unused recorded request
before one already used (a repeated call gets the same answer again); then by method in recorded
order among the answered ones; once every recorded request of a method has been used, the last
one used answers again.
The answer is the recorded response under the live request's id, preceded by the server
notifications the recording had while that request ran (a progress notification carries the
live request's progress token, and is left out when the live request asked for none). A
recorded request that was never answered (its client cancelled it, or the session ended first)
is served as no answer: its notifications go out, then nothing, until the client cancels it
(`notifications/cancelled`; over HTTP also by closing the response stream) or goes away; a
cancelled request is never answered, whatever was still to come for it. A ping with nothing
recorded gets `{}`; any other request with nothing recorded gets a JSON-RPC error.

For testing hosts: pacing at the recorded latency, and faults by method (drop: never answer;
delay: answer late; corrupt: answer with the recorded frame cut in half, which is not JSON)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from mcp_types import jsonrpc

from mcptap.replay import script

from mcptap.wire import jsonwire
from mcptap.analysis.classify import NOTIFICATION, REQUEST, classify

UNKNOWN_METHOD, PARSE_ERROR, INVALID_REQUEST = jsonrpc.METHOD_NOT_FOUND, jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST
ANY_METHOD = "*"
MAX_DELAY_S = 86_400.0
DEFAULT_MAX_BODY = 16 << 20
"""The largest client frame read (16 MiB, `serve --max-body`): an HTTP body past it gets 413 unread,
a stdio line past it an Invalid Request error, never held whole."""


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
    request), the last of them the answer when `answered`. A request served as unanswered gets
    its notifications only, or nothing at all when `dropped` (a fault)."""

    frames: list[tuple[float, bytes]] = field(default_factory=list)
    answered: bool = True
    dropped: bool = False
    matched: str = ""  # how the request was matched: exact | method | reused | builtin | none

    @property
    def answer(self) -> bytes | None:
        return self.frames[-1][1] if self.answered and self.frames else None


class Recording:
    """A recorded session's client requests indexed for matching (read-only: every live session
    served from it shares one)."""

    def __init__(self, recorded: script.Script):
        from mcptap.redaction import FrameRedactor

        self.script = recorded
        self.exact: dict[tuple, list[script.Message]] = {}  # (method, params) -> its requests, in recorded order
        self.answered: dict[str, list[script.Message]] = {}  # method -> its answered requests, in recorded order
        self.keys: dict[int, tuple] = {}
        for entry in recorded.messages(script.C2S, REQUEST):
            key = self.keys[id(entry)] = (entry.method, _canonical_params(entry.params))
            self.exact.setdefault(key, []).append(entry)
            if entry.answer is not None:
                self.answered.setdefault(entry.method, []).append(entry)
        self.has_handshake = "initialize" in self.answered
        self._redactor = FrameRedactor()  # live params as a recording would hold them, for matching

    def key(self, request: dict) -> tuple:
        """What a live request is matched by: its method and its params as recorded."""
        return request.get("method"), _canonical_params(self._as_recorded(request.get("params")))

    def _as_recorded(self, params: Any) -> Any:
        """Params with credential members replaced as the recorder replaced them (same key,
        same hash), so that a call with a password matches its recorded, redacted self."""
        raw = _encode(params)
        redacted, paths = self._redactor.frame(raw)
        return params if paths is None else jsonwire.parse(redacted).value


class Responder:
    """Recorded answers for one live session's requests (thread-safe)."""

    def __init__(self, recorded: Recording | script.Script, faults: Faults | None = None):
        self.faults = faults or Faults()
        self.recording = recorded if isinstance(recorded, Recording) else Recording(recorded)
        self.has_handshake = self.recording.has_handshake
        self._used: set[int] = set()
        self._first: dict[tuple, int] = {}  # a list of candidates -> where its first unused one may be
        self._last_exact: dict[tuple, script.Message] = {}
        self._last_method: dict[str, script.Message] = {}
        self._lock = threading.Lock()

    def reply(self, request: dict) -> Reply:
        method = request.get("method")
        key = self.recording.key(request)
        with self._lock:
            entry, how = self._match(key)
        if self.faults._hit(self.faults.drop, method):
            return Reply(answered=False, dropped=True, matched=how)
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
        answered = entry.answer is not None
        if answered and self.faults._hit(self.faults.corrupt, method):
            delay, raw = frames[-1]
            frames[-1] = (delay, raw[: max(1, len(raw) // 2)])
        return Reply(frames, answered=answered, matched=how)

    def _match(self, key: tuple) -> tuple[script.Message | None, str]:
        """The recorded request to answer with: an unused one of the same method and params
        (answered or not: one never answered is served as no answer), else the last of them used
        (a repeated call gets the same answer again; an answered one before one that was not),
        then the next unused answered one of the method in recorded order, else the last of the
        method used."""
        entry = self._first_unused(("exact", key), self.recording.exact.get(key, ()))
        if entry is not None:
            return self._use(entry), "exact"
        if key in self._last_exact:
            return self._last_exact[key], "reused"
        method = key[0]
        entry = self._first_unused(("method", method), self.recording.answered.get(method, ()))
        if entry is not None:
            return self._use(entry), "method"
        entry = self._last_method.get(method)
        return entry, "reused" if entry is not None else "none"

    def _first_unused(self, name: tuple, candidates) -> script.Message | None:
        i = self._first.get(name, 0)
        while i < len(candidates) and id(candidates[i]) in self._used:
            i += 1
        self._first[name] = i
        return candidates[i] if i < len(candidates) else None

    def _use(self, entry: script.Message) -> script.Message:
        self._used.add(id(entry))
        key = self.recording.keys[id(entry)]
        if entry.answer is not None or key not in self._last_exact:
            self._last_exact[key] = entry
        if entry.answer is not None:
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
        if entry.answer is not None:
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
    return jsonwire.to_json(params, sort_keys=True)


def _encode(value: Any) -> bytes:
    return jsonwire.to_json(value).encode("utf-8", "surrogatepass")


def error_frame(ident: Any, code: int, message: str) -> bytes:
    return _encode({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


@dataclass
class Incoming:
    """What one frame from the client carries: its requests, the ids it cancels, a frame to
    answer at once (a parse or structure error), and whether it was a batch."""

    requests: list[dict] = field(default_factory=list)
    cancelled: list[Any] = field(default_factory=list)
    immediate: bytes | None = None
    batch: bool = False


def read_frame(raw: bytes) -> Incoming:
    """What a frame from the client carries, as JSON-RPC 2.0 reads it."""
    parsed = jsonwire.parse(raw)
    if parsed.error is not None:
        return Incoming(immediate=error_frame(None, PARSE_ERROR, f"Parse error: {parsed.error}"))
    out = Incoming(batch=type(parsed.value) is list)
    for value in parsed.value if out.batch else [parsed.value]:
        kind = classify(value)[1]
        if kind == REQUEST:
            out.requests.append(value)
        elif kind == NOTIFICATION:
            params = value.get("params")
            if value.get("method") == "notifications/cancelled" and type(params) is dict and "requestId" in params:
                out.cancelled.append(params["requestId"])
        elif not (type(value) is dict and ("result" in value or "error" in value)):
            out.immediate = error_frame(None, INVALID_REQUEST, "Invalid Request")
            return out
    return out


def batch_answer(replies: list[Reply]) -> bytes:
    """The answer to a batch: its requests' answers in one array (a request served as unanswered
    has none, a corrupted answer is left out), each written as it was (analyzer/wire/jsonwire.py)."""
    answers = (jsonwire.parse(r.answer) for r in replies if r.answer is not None)
    return _encode([a.value for a in answers if a.error is None])


# -- stdio ------------------------------------------------------------------------------------------
