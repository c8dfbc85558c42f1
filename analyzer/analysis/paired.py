"""The paired view of a session: each request with its answer, latency, outcome, the
notifications that belong to it (progress, cancellation) and its findings; every other message
(a notification of its own) as an operation without an answer. Built from the analysis' own
message rows (analyzer/analysis/session.py pairs; this only joins) and the frames, so exports,
the report and the pandas API give one answer to "what happened to request N". Pure: frames and
rows in, operations out; memory grows with the requests still waiting for their answer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import json

import orjson

from mcptap.analysis import mcp
from mcptap.analysis.messages import Finding

OK, ERROR, TOOL_ERROR, UNANSWERED, CANCELLED, NOTIFICATION = (
    "ok", "error", "tool_error", "unanswered", "cancelled", "notification")
OUTCOMES = (OK, ERROR, TOOL_ERROR, UNANSWERED, CANCELLED, NOTIFICATION)
RELATED = ("notifications/progress", "notifications/cancelled")
"""Notifications that belong to a request (by progress token, by request id) rather than
standing alone."""


@dataclass(slots=True)
class Note:
    """A notification that belongs to an operation: its frame, time, method and params."""

    seq: int
    ts: float
    method: str
    params: Any


@dataclass(slots=True)
class Operation:
    """One request and what became of it, or one notification on its own. `direction` is the
    sender's (c2s: the client sent it); `request`/`response` are the parsed messages (dicts)."""

    session_id: str
    seq: int
    idx: int | None
    ts: float
    direction: str
    method: str
    id: Any = mcp.ABSENT  # the request's id as parsed (ABSENT for a notification)
    request: Any = None
    response: Any = None
    response_seq: int | None = None
    response_ts: float | None = None
    outcome: str = UNANSWERED
    error_code: Any = None
    error_message: str | None = None
    notes: list[Note] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # its logical operation (analyzer/analysis/logical_operations.py): the first request's frame, the request
    # this one continues, its step, and the operation's latency on the answer that ends it
    operation: str | None = None
    parent: int | None = None
    step: str | None = None
    operation_latency_s: float | None = None

    @property
    def latency_s(self) -> float | None:
        return None if self.response_ts is None else self.response_ts - self.ts

    @property
    def params(self) -> dict:
        p = self.request.get("params") if isinstance(self.request, dict) else None
        return p if isinstance(p, dict) else {}

    @property
    def meta(self) -> dict:
        m = self.params.get("_meta")
        return m if isinstance(m, dict) else {}


def messages(raw: bytes) -> list[tuple[int | None, Any]]:
    """A frame's messages as (batch index or None, parsed value, a dict); nothing when it is not
    JSON (a batch: its objects, each with its index)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # a lone surrogate escape (`"\\udc80"`), which JSON allows and orjson refuses
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return []
    if isinstance(value, list):
        return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)]
    return [(None, value)] if isinstance(value, dict) else []


def answered(op: Operation, value: dict, kind: str, seq: int, ts: float) -> None:
    """`op`'s request answered by `value` (its kind: "response" or "error", as classified) in
    frame `seq` at `ts`: its response, outcome, error code and message; an answer that succeeds
    after a cancellation among its notes makes it CANCELLED."""
    op.response, op.response_seq, op.response_ts = value, seq, ts
    _outcome(op, value, kind)
    if op.outcome == OK and any(n.method == "notifications/cancelled" for n in op.notes):
        op.outcome = CANCELLED


def _outcome(op: Operation, value: dict, kind: str) -> None:
    if kind == "error" or "error" in value:
        err = value.get("error")
        op.outcome = ERROR
        if isinstance(err, dict):
            op.error_code = err.get("code")
            message = err.get("message")
            op.error_message = message if isinstance(message, str) else None
        return
    result = value.get("result")
    if op.method == "tools/call" and isinstance(result, dict) and result.get("isError") is True:
        op.outcome = TOOL_ERROR
        return
    op.outcome = OK


def operations(session_id: str, frames: Iterable[tuple[int, float, str, bytes]], rows: Iterable,
               findings: Iterable[Finding] = ()) -> Iterator[Operation]:
    """The session's operations, each given once it is complete (a request when its answer
    comes, the rest at the end), from its frames (seq, ts, direction, raw bytes) in seq order,
    the analysis' message rows (session, frame_seq, idx, direction, kind, id, method,
    paired_frame, latency_s) and finding rows. Progress and cancellation notifications go into
    the notes of the request they name; findings to the operation of their frame."""
    kinds: dict[tuple[int, int | None], tuple[str, int | None]] = {}
    for r in rows:
        kinds[(r.frame_seq, r.idx)] = (r.kind, r.paired_frame)
    by_frame: dict[int, list[Finding]] = {}
    for f in findings:
        if f.frame_seq is not None:
            by_frame.setdefault(f.frame_seq, []).append(f)
    waiting: dict[tuple[str, str], Operation] = {}  # (sender direction, id JSON) -> the request
    by_token: dict[tuple[str, str], Operation] = {}  # (sender of the request, token JSON)
    at_frame: dict[int, Operation] = {}  # request frame seq -> its operation, for findings of its answer
    loose: list[Operation] = []
    for seq, ts, direction, raw in frames:
        for idx, value in messages(raw):
            kind, paired = kinds.get((seq, idx), (None, None))
            method = value.get("method")
            if kind == "request" and isinstance(method, str):
                op = Operation(session_id, seq, idx, ts, direction, method, value.get("id"), value)
                op.findings.extend(by_frame.pop(seq, ()) if idx in (None, 0) else ())
                waiting[(direction, orjson.dumps(value.get("id")).decode())] = op
                at_frame[seq] = op
                token = op.meta.get("progressToken")
                if token is not None:
                    by_token[(direction, orjson.dumps(token).decode())] = op
            elif kind in ("response", "error"):
                asker = mcp.S2C if direction == mcp.C2S else mcp.C2S
                op = waiting.pop((asker, orjson.dumps(value.get("id")).decode()), None)
                if op is None:
                    continue
                answered(op, value, kind, seq, ts)
                op.findings.extend(by_frame.pop(seq, ()) if idx in (None, 0) else ())
                _drop_token(by_token, op)
                at_frame.pop(op.seq, None)
                yield op
            elif kind == "notification" and isinstance(method, str):
                params = value.get("params") if isinstance(value.get("params"), dict) else {}
                owner = None
                if method == "notifications/progress":
                    asker = mcp.S2C if direction == mcp.C2S else mcp.C2S
                    owner = by_token.get((asker, orjson.dumps(params.get("progressToken")).decode()))
                elif method == "notifications/cancelled":
                    owner = waiting.get((direction, orjson.dumps(params.get("requestId")).decode()))
                if owner is not None:
                    owner.notes.append(Note(seq, ts, method, params))
                    owner.findings.extend(by_frame.pop(seq, ()))
                    continue
                op = Operation(session_id, seq, idx, ts, direction, method, mcp.ABSENT, value, outcome=NOTIFICATION)
                op.findings.extend(by_frame.pop(seq, ()) if idx in (None, 0) else ())
                loose.append(op)
    for op in waiting.values():
        op.outcome = CANCELLED if any(n.method == "notifications/cancelled" for n in op.notes) else UNANSWERED
        yield op
    yield from loose


def _drop_token(by_token: dict, op: Operation) -> None:
    token = op.meta.get("progressToken")
    if token is not None:
        by_token.pop((op.direction, orjson.dumps(token).decode()), None)


def target(op: Operation) -> tuple[str | None, str | None]:
    """(gen_ai.tool.name, gen_ai.prompt.name) of an operation: the name a tools/call or
    prompts/get carries, else None."""
    name = op.params.get("name")
    if not isinstance(name, str):
        return None, None
    if op.method == "tools/call":
        return name, None
    if op.method == "prompts/get":
        return None, name
    return None, None


def resource_uri(op: Operation) -> str | None:
    """The resource URI of a resources/read, subscribe, unsubscribe or resources/updated."""
    if op.method in ("resources/read", "resources/subscribe", "resources/unsubscribe",
                     "notifications/resources/updated"):
        uri = op.params.get("uri")
        return uri if isinstance(uri, str) else None
    return None
