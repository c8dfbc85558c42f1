"""A recorded session read as a script, for `mcptap replay` and `mcptap serve`: every frame
parsed and classified, requests paired with their answers in both directions, and for each
client request the server's notifications that came while it was being served.

Pure: frames in, a Script out (analyzer/store reads the frames)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from mcptap import store

from mcptap.store import cells

from mcptap.wire import jsonwire
from mcptap.analysis.classify import ERROR, NOTIFICATION, REQUEST, RESPONSE, classify
from mcptap.analysis.messages import id_key

C2S, S2C = "c2s", "s2c"
_OTHER = {C2S: S2C, S2C: C2S}


@dataclass(eq=False)
class Message:
    """One JSON-RPC message of the recording: a frame, or one element of a batch."""

    seq: int
    idx: int | None
    ts: float
    direction: str
    value: Any  # as jsonwire parsed it (numbers as written)
    kind: str
    method: str | None = None
    answer: "Message | None" = None  # a request's response (or error)
    request: "Message | None" = None  # a response's request
    during: list["Message"] = field(default_factory=list)  # a client request: server notifications while it ran

    @property
    def id(self) -> Any:
        return self.value.get("id") if type(self.value) is dict else None

    @property
    def params(self) -> Any:
        return self.value.get("params") if type(self.value) is dict else None

    def label(self) -> str:
        what = self.method or (self.request.method if self.request is not None else None) or self.kind
        ident = f" (id {jsonwire.to_json(self.id)})" if type(self.value) is dict and "id" in self.value else ""
        return f"frame {self.seq}{'' if self.idx is None else f'[{self.idx}]'} {what}{ident}"


@dataclass(eq=False)
class Frame:
    seq: int
    ts: float
    direction: str
    raw: bytes
    messages: list[Message]  # empty when the frame is not JSON


@dataclass
class Script:
    session: dict
    frames: list[Frame]

    @property
    def client_frames(self) -> list[Frame]:
        return [f for f in self.frames if f.direction == C2S]

    def messages(self, direction: str | None = None, kind: str | None = None) -> list[Message]:
        return [m for f in self.frames for m in f.messages
                if (direction is None or m.direction == direction) and (kind is None or m.kind == kind)]


def load(conn: sqlite3.Connection, ref: str) -> Script:
    """The session `ref` (id, id prefix or label) as a Script."""
    sid = store.resolve_session(conn, ref)
    cells.check(conn, [sid], ("sessions", "frames", "exchanges"))  # costs what reading them all costs
    return build(store.get_session(conn, sid), [(f.seq, f.ts, f.direction, f.raw) for f in store.iter_frames(conn, sid)])


def build(session: dict, rows: list[tuple[int, float, str, bytes]]) -> Script:
    frames: list[Frame] = []
    outstanding: dict[tuple, Message] = {}
    running: dict[int, Message] = {}  # client requests not yet answered, by id(), oldest first
    tokens: dict[tuple, Message] = {}  # progress token of a running client request -> it
    for seq, ts, direction, raw in rows:
        parsed = jsonwire.parse(raw)
        frame = Frame(seq, ts, direction, bytes(raw), [])
        frames.append(frame)
        if parsed.error is not None:
            continue
        values = parsed.value if type(parsed.value) is list else [parsed.value]
        for i, value in enumerate(values):
            kind = classify(value)[1]
            msg = Message(seq, i if type(parsed.value) is list else None, ts, direction, value, kind)
            frame.messages.append(msg)
            if type(value) is dict and type(value.get("method")) is str:
                msg.method = value["method"]
            if kind == REQUEST:
                outstanding.setdefault((direction, id_key(msg.id)), msg)
                if direction == C2S:
                    running[id(msg)] = msg
                    token = _progress_token(msg)
                    if token is not None:
                        tokens[token] = msg
            elif kind in (RESPONSE, ERROR):
                req = outstanding.pop((_OTHER[direction], id_key(msg.id)), None)
                if req is not None:
                    req.answer, msg.request = msg, req
                    running.pop(id(req), None)
            elif kind == NOTIFICATION and direction == S2C and running:
                owner = _owner(msg, tokens) or next(reversed(running.values()))
                owner.during.append(msg)
            elif kind == NOTIFICATION and direction == C2S and msg.method == "notifications/cancelled":
                _cancel(msg, running, outstanding)
    return Script(session, frames)


def _progress_token(msg: Message) -> tuple | None:
    params = msg.params
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is dict and "progressToken" in meta:
        return id_key(meta["progressToken"])
    return None


def _cancel(note: Message, running: dict[int, Message], outstanding: dict[tuple, Message]) -> None:
    """A client request its client cancelled is no longer running: later server notifications
    that name no request are not its (progress under its token still is)."""
    params = note.params
    if type(params) is dict and "requestId" in params:
        req = outstanding.get((C2S, id_key(params["requestId"])))
        if req is not None:
            running.pop(id(req), None)


def _owner(note: Message, tokens: dict[tuple, Message]) -> Message | None:
    """The client request a progress notification reports on, by its token."""
    params = note.params
    if note.method == "notifications/progress" and type(params) is dict and "progressToken" in params:
        req = tokens.get(id_key(params["progressToken"]))
        if req is not None and req.answer is None:
            return req
    return None


ID_SCAN_BYTES = 1 << 16
"""How much of a frame kept cut is read for its id: an envelope's `id` comes early, if at all."""
NO_ID = object()


def id_in_prefix(prefix: bytes) -> Any:
    """The `id` member of the top-level object a frame kept cut at --max-frame begins with, as
    jsonwire parses it, when it is in the first ID_SCAN_BYTES bytes; else NO_ID."""
    text = bytes(prefix[:ID_SCAN_BYTES]).decode("utf-8", "ignore")
    depth, key, expect_key, pos = 0, None, False, 0
    while (m := jsonwire.TOKEN.match(text, pos)) is not None:
        pos = m.end()
        if m.group("ws"):
            continue
        tok = m.group()
        if m.group("punct") is not None:
            if tok in "{[":
                if depth == 0 and tok != "{":
                    return NO_ID
                depth += 1
                expect_key = depth == 1
            elif tok in "}]":
                depth -= 1
                if depth <= 0:
                    return NO_ID
            elif tok == "," and depth == 1:
                expect_key = True
            continue
        if depth == 0:
            return NO_ID
        if depth == 1 and expect_key:
            key, expect_key = tok, False
        elif depth == 1 and key == '"id"':
            return jsonwire.parse(tok).value
        elif depth == 1:
            key = None
    return NO_ID
