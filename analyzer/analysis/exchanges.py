"""HTTP in the session core: what each request body carried (`Posted`: what an answer in its
exchange may answer), how an exchange ended (`client_gone`, `http_error`), and the transport rules'
view of an exchange (`HttpExchange`); `HttpFrames` is the part of SessionAnalysis that takes
frames with their exchange and runs those rules at the end."""

from __future__ import annotations

from typing import Any

from mcptap.analysis import mcp
from mcptap.analysis.classify import REQUEST, classify
from mcptap.analysis.messages import _MISSING, Frame, Msg, id_key
from mcptap.analysis.statistics import _storable
from mcptap.wire import jsonwire

C2S, S2C = mcp.C2S, mcp.S2C


class Posted:
    """What an HTTP request's body carried: its frame, the kinds and methods of its messages,
    the 2026-07-28 `_meta` protocol version of a single request, the requests it carried (by
    pairing key: all that an answer in its exchange may answer) and the message or frame itself
    (`last`, as `SessionAnalysis.last_sent` holds it: what an answer with id null answers)."""

    __slots__ = ("seq", "kinds", "methods", "meta_version", "requests", "last")

    def __init__(self, seq: int | None, kinds: tuple[str, ...], methods: tuple, meta_version: Any,
                 requests: dict | None = None, last: Any = None):
        self.seq, self.kinds, self.methods, self.meta_version = seq, kinds, methods, meta_version
        self.requests: dict[tuple, Msg] = requests if requests is not None else {}
        self.last = last


NOTHING_POSTED = Posted(None, (), (), None)
"""The body of an exchange that carried no JSON-RPC message (a GET, a DELETE)."""

CLIENT_GONE = ("client disconnected", "net::err_aborted")
"""How an exchange whose client went away ends: mitmproxy's `error: Client disconnected.` (live, in
its dumps and its HAR exports), a browser HAR's `net::ERR_ABORTED`."""


def client_gone(row: dict) -> bool:
    """The exchange ended with its client gone before the answer was complete."""
    outcome = (row.get("outcome") or "").lower()
    return outcome.startswith("error") and any(why in outcome for why in CLIENT_GONE)


def refused(row: dict | None) -> bool:
    """The exchange was refused 401/403 with an answer that is no JSON-RPC message (an OAuth
    challenge, or another explanation of the status the capture stored beside the exchange)."""
    return row is not None and row.get("status") in (401, 403) and row.get("role") is not None


AUTH_ROLES = frozenset({"auth-discovery", "auth-register", "auth-authorize", "auth-token"})
"""Roles of exchanges of the authorization flow, not MCP's (addons/http/auth.py)."""


def http_error(row: dict) -> bool:
    """The exchange was answered with an HTTP error status (its body, if any, explains the error)."""
    status = row.get("status")
    return type(status) is int and status >= 400


class HttpExchange:
    """An HTTP exchange as the transport rules see it: its stored row (`row`), and what its
    request body carried (`seq` of that frame, the `kinds` and `methods` of its messages)."""

    def __init__(self, row: dict, posted: Posted | None, init_seq: int | None):
        self.row = row
        self.method, self.status = row["method"], row["status"]
        self.seq = posted.seq if posted is not None else None
        self.kinds = posted.kinds if posted is not None else ()
        self.methods = posted.methods if posted is not None else ()
        self.meta_version = posted.meta_version if posted is not None else None
        self.is_initialize = posted is not None and posted.seq == init_seq

    def __str__(self) -> str:
        what = f"frame {self.seq}" if self.seq is not None else f"exchange {self.row['id']}"
        return f"{self.method} {self.row['url']} ({what})"



class HttpFrames:
    """SessionAnalysis's HTTP part (its state is set up in SessionAnalysis.__init__)."""

    def http_frame(self, seq: int, ts: float, direction: str, raw: str | bytes, exchange: str | None) -> None:
        """A frame that crossed HTTP in `exchange`: `frame()`, and for a request body, a note of
        what it carried, for the transport rules and for pairing. An answer in a POST's exchange,
        or in an HTTP error's body, can only answer what that exchange carried; an answer on a
        GET stream answers the session's outstanding requests by id."""
        if direction == C2S and exchange is not None and refused(self._exchange_rows.get(exchange)):
            self.refused_seqs[exchange] = seq
            self._refused_frame(seq, ts, direction, raw)
            return
        row = self._exchange_rows.get(exchange) if exchange is not None and direction == S2C else None
        if row is not None and (row["method"] == "POST" or http_error(row)):
            self._scope, self._scope_error = self._posted.get(exchange, NOTHING_POSTED), http_error(row)
            try:
                self.frame(seq, ts, direction, raw)
            finally:
                self._scope, self._scope_error = None, False
            return
        self.frame(seq, ts, direction, raw)
        if exchange is not None and direction == C2S and exchange not in self._posted:
            entry = self.last_sent.get(direction)
            last = self._last(direction)
            messages = last.elements if isinstance(last, Frame) else [last]
            meta = messages[0].meta() if len(messages) == 1 and type(messages[0].value) is dict else {}
            requests = {}
            for m in messages:
                if m.kind == REQUEST:
                    key = (direction, id_key(m.id))
                    req = self.outstanding.get(key)
                    if req is not None and req.seq == seq:
                        requests[key] = req
            self._posted[exchange] = Posted(seq, tuple(m.kind for m in messages) or (last.kind,),
                                            tuple(m.method for m in messages), meta.get(mcp.META_PROTOCOL_VERSION),
                                            requests, entry)

    def _refused_frame(self, seq: int, ts: float, direction: str, raw: str | bytes) -> None:
        """A request body the server refused with 401/403 before reading it (MCP basic/authorization:
        the client authorizes, then sends the same request again): answered by that refusal, so not
        awaiting an answer, and not the session's first request either; the retry is the request.
        Its messages get their rows (kind, id, method), and nothing else follows from them."""
        parsed = jsonwire.parse(raw)
        value = parsed.value
        if parsed.error is not None or type(value) is not dict:
            self.frame(seq, ts, direction, raw)  # not one message: judged as it is
            return
        self.frames += 1
        sig, kind = classify(value)
        method = value.get("method")
        ident = value.get("id", _MISSING)
        id_json = None if ident is _MISSING else (str(ident) if type(ident) is int else jsonwire.to_json(ident))
        self._rows.append([self.session_id, seq, None, direction, kind, id_json,
                           _storable(method) if type(method) is str else None, None, None])
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def _streams_closed(self) -> None:
        """2026-07-28 over HTTP: "Closing the SSE response stream MUST be treated as cancellation"
        (and so is the client closing the request before any answer came): a request still
        awaiting its answer when its exchange ended with the client gone was cancelled."""
        for row in self.exchanges:
            posted = self._posted.get(row["id"])
            if posted is None or not client_gone(row):
                continue
            for key, req in posted.requests.items():
                if self.outstanding.get(key) is req:
                    req.stream_closed = True

    def _exchange_rules(self) -> None:
        """The transport rules, over the session's HTTP exchanges in the order they started."""
        init_seq = self.init_request.seq if self.init_request is not None else None
        self.assigned_session = None
        for row in self.exchanges:
            if row.get("role") in AUTH_ROLES:
                continue  # not MCP: the authorization rules read them (`_auth_rules`)
            ex = HttpExchange(row, self._posted.get(row["id"]), init_seq)
            for rule in self._dispatch.exchange:
                hit = rule.check(ex, self)
                if hit is not None:
                    self.add(rule, hit, ex.seq, None)
            if ex.is_initialize and row["assigned_session"] and self.assigned_session is None:
                self.assigned_session, self.assigned_at = row["assigned_session"], row["response_at"] or row["started_at"]
