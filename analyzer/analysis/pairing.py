"""Pairing in the session core: a request awaits its response (`_request`, `_await`), a
response finds its request by id in the other direction, within its HTTP exchange's scope where
it has one (`_response`, `_scoped_elsewhere`), an answer with id null is placed by what came
before it (`_null_id_response`), and a pair is recorded with its latency (`_answer`)."""

from __future__ import annotations

import math

from mcptap.analysis import mcp
from mcptap.analysis.classify import BATCH, ERROR, INVALID, NOTIFICATION, REQUEST
from mcptap.analysis.exchanges import Posted
from mcptap.analysis.statistics import tool_error
from mcptap.analysis.messages import _MISSING, Frame, MessageRow, Msg, Req, WireMsg, id_key, loose_key
from mcptap.wire.jsonwire import NumberText

C2S, OTHER = mcp.C2S, mcp.OTHER
_NO_META: dict = {}
_isfinite = math.isfinite


class Pairing:
    """SessionAnalysis's pairing part (its state, `outstanding`, `answered`, `last_sent`, is set
    up in SessionAnalysis.__init__). `joins`: a 2026-07-28 answer said input_required, so the
    session has logical operations to join (analyzer/analysis/logical_operations.py; such answers take
    the exact path)."""

    joins = False

    def _last(self, direction: str) -> Msg | Frame | None:
        """The last message or frame sent this way (a fast-path message is built on demand)."""
        return self._built(self.last_sent.get(direction))

    @staticmethod
    def _built(last: Msg | Frame | tuple | None) -> Msg | Frame | None:
        """A `last_sent` entry as a message or frame (a fast-path message's tuple built into one)."""
        if type(last) is tuple:
            seq, ts, direction, raw, sig, kind, method, ident, id_json = last
            last = WireMsg(seq, ts, direction, raw, sig, kind, method, ident, id_json, None)
        return last

    def _request(self, msg: Msg) -> None:
        key = (msg.direction, id_key(msg.id))
        req = msg.request = msg
        if msg.idx is not None:
            msg.batch = msg.frame
        params = msg.value.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is not dict:
            meta = _NO_META
        if self.handshake and msg.direction == C2S and self.init_request is None and mcp.META_PROTOCOL_VERSION in meta:
            msg.probe = True
        earlier = self.outstanding.get(key)
        if earlier is not None:
            msg.pairing, msg.related = "duplicate-outstanding", earlier.seq
            self._rows.append(msg.row)  # the earlier one keeps the id; this one is not awaited
            return
        used = self.answered.get(key)
        if used is not None:
            msg.pairing, msg.related = "reused", used[0]
        else:
            msg.pairing = "new"
        self._await(req, key, meta)

    def _await(self, req: Req, key: tuple, meta: dict) -> None:
        """A request now awaits its response: its progress token and log level noted."""
        self.outstanding[key] = req
        known = self._by_method.get(req.method)
        (known or self._method_record(req.method))[1]["calls"] += 1
        if not meta:
            return
        token = meta.get("progressToken", _MISSING)
        if token is not _MISSING and type(token) in (str, int, float, NumberText):
            req.token = (req.direction, id_key(token))
            self.tokens[req.token] = [req, None]
        if mcp.META_LOG_LEVEL in meta:
            req.log_level = True
        if self.stateless:  # the extensions the client declared on some request of the session
            caps = meta.get(mcp.META_CLIENT_CAPABILITIES)
            if type(caps) is dict and "extensions" in caps:
                self.client_extensions.update(mcp.extensions_declared(caps))

    def _response(self, msg: Msg) -> None:
        request_direction = OTHER[msg.direction]
        scope = self._scope
        if msg.id is None:
            key = (request_direction, id_key(None))
            if key not in self.outstanding or (scope is not None and key not in scope.requests):
                self._null_id_response(msg)
                return
        else:
            key = (request_direction, id_key(msg.id))
        if scope is not None:
            mine = scope.requests.get(key)
            if mine is None or self.outstanding.get(key) is not mine:
                self._scoped_elsewhere(msg, key, scope)
                return
        req = self.outstanding.pop(key, None)
        if req is not None:
            msg.pairing, msg.request, msg.related = "matched", req, req.seq
            self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, req, msg.value)
            return
        done = self.answered.get(key)
        if done is not None:
            msg.pairing, msg.related = "duplicate", done[1]
            return
        loose = loose_key(msg.id)
        if loose is not None:  # rare: look for the same id written as another type
            for other_key, req in self.outstanding.items():
                if other_key[0] == request_direction and loose_key(req.id) == loose:
                    del self.outstanding[other_key]
                    msg.pairing, msg.request, msg.related = "type-mismatch", req, req.seq
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, other_key, req, msg.value)
                    return
        msg.pairing = "unknown"

    def _answer(self, row: MessageRow, kind: str, seq: int, ts: float, key: tuple, req: Req, value=None) -> None:
        """The response (its messages `row`, `kind`, frame `seq` and time `ts`; `value`, when the
        exact path built it) answers `req`."""
        self.answered[key] = (req.seq, seq)
        latency = ts - req.ts
        if not _isfinite(latency):  # a log's impossible times
            latency = None
        name, stats = self._by_method.get(req.method) or self._method_record(req.method)
        row[6], row[7], row[8] = name, req.seq, latency  # a response row names its method
        if latency is not None:
            stats["latencies"].add(latency)
        if kind == ERROR:
            stats["errors"] += 1
        elif value is not None and self.stateless and _input_required(value):
            self.joins = True
        elif value is not None and tool_error(req.method, value):
            stats["tool_errors"] += 1
        if req.row is not None:
            req.row[7], req.row[8] = seq, latency
            self._rows.append(req.row)
            req.row = None
        if req.token is not None:
            self.tokens.pop(req.token, None)
            self.done_tokens[req.token] = seq

    def _scoped_elsewhere(self, msg: Msg, key: tuple, scope: Posted) -> None:
        """An answer in an HTTP exchange whose id is not that of a request the exchange carried
        (and still awaiting its answer): answered already, another exchange's, or unknown."""
        if key in scope.requests:  # its own request, answered already
            done = self.answered.get(key)
            msg.pairing, msg.related = ("duplicate", done[1]) if done is not None else ("unknown", None)
            return
        loose = loose_key(msg.id)
        for own_key, req in scope.requests.items():  # its own request, its id written as another type
            if loose is not None and loose_key(req.id) == loose and self.outstanding.get(own_key) is req:
                del self.outstanding[own_key]
                msg.pairing, msg.request, msg.related = "type-mismatch", req, req.seq
                self._answer(msg.row, msg.kind, msg.seq, msg.ts, own_key, req, msg.value)
                return
        other = self.outstanding.get(key)
        if other is not None:
            msg.pairing, msg.related = "other-exchange", other.seq
        else:
            msg.pairing = "unknown"

    def _null_id_response(self, msg: Msg) -> None:
        """A response with "id": null: right after input whose id could not be read (or after a
        batch refused whole), else it answers a notification or hides a readable id. Over HTTP,
        in a POST's exchange, it answers what that POST carried; in an HTTP error's body it is the
        transport's explanation of the error (the spec allows "a JSON-RPC error response that
        has no id" there): the answer of the request the exchange carried, if any, and no finding."""
        scope = self._scope
        if scope is None:
            last = self._last(OTHER[msg.direction])
        else:
            last = self._built(scope.last)
            if self._scope_error and not isinstance(last, Frame):
                req = next(iter(scope.requests.values()), None)
                key = (req.direction, id_key(req.id)) if req is not None else None
                if req is not None and self.outstanding.get(key) is req:
                    del self.outstanding[key]
                    msg.pairing, msg.request, msg.related = "http-rejected", req, req.seq
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, req, msg.value)
                else:
                    msg.pairing, msg.related = "http-error", scope.seq
                return
        if last is None:
            msg.pairing = "unknown"
        elif isinstance(last, Frame):  # unparseable, or a batch
            if last.kind == BATCH:
                msg.pairing, msg.related = "batch-refused", last.seq
                for element in last.elements:
                    if element.request is not None and element.kind == REQUEST:
                        element.request.rejected = True
            else:
                msg.pairing, msg.related = "unreadable", last.seq
        elif last.kind == NOTIFICATION or (last.kind == INVALID and last.method is not None and not last.has_id):
            msg.pairing, msg.related = "notification", last.seq
        elif last.has_id and last.sig.id not in ("bool", "container") and last.kind in (REQUEST, INVALID):
            msg.pairing, msg.related = "null-with-known-id", last.seq
            if last.kind == REQUEST and last.request is not None:
                key = (last.direction, id_key(last.id))
                if self.outstanding.get(key) is last.request:
                    del self.outstanding[key]
                    msg.request = last.request
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, last.request, msg.value)
        elif last.kind == INVALID:
            msg.pairing, msg.related = "unreadable", last.seq
        else:
            msg.pairing = "unknown"


def _input_required(value) -> bool:
    """Whether a response (its parsed value) is a result with `resultType: "input_required"`."""
    result = value.get("result") if type(value) is dict else None
    return type(result) is dict and result.get("resultType") == "input_required"
