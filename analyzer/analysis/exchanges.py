"""HTTP in the session core: what each request body carried (`Posted`: what an answer in its
exchange may answer), how an exchange ended (`client_gone`, `http_error`), and the transport rules'
view of an exchange (`HttpExchange`); `HttpFrames` is the part of SessionAnalysis that takes
frames with their exchange and runs those rules at the end."""

from __future__ import annotations

import json
from typing import Any

from mcptap.analysis import mcp
from mcptap.analysis.classify import ERROR, REQUEST, RESPONSE, classify
from mcptap.analysis.messages import _MISSING, UNREAD, Frame, Msg, id_key
from mcptap.analysis.statistics import _storable
from mcptap.wire import jsonwire

C2S, S2C = mcp.C2S, mcp.S2C
TOOL_LIST = "tools/list"
X_MCP_HEADER = "x-mcp-header"
LISTEN = "subscriptions/listen"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


class Posted:
    """What an HTTP request's body carried: its frame, the kinds and methods of its messages,
    the 2026-07-28 `_meta` protocol version of a single request, the requests it carried (by
    pairing key: all that an answer in its exchange may answer), the message or frame itself
    (`last`, as `SessionAnalysis.last_sent` holds it: what an answer with id null answers), and
    a single message's `params` (None: not one message, or no params object)."""

    __slots__ = ("seq", "kinds", "methods", "meta_version", "requests", "last", "params")

    def __init__(self, seq: int | None, kinds: tuple[str, ...], methods: tuple, meta_version: Any,
                 requests: dict | None = None, last: Any = None, params: dict | None = None):
        self.seq, self.kinds, self.methods, self.meta_version = seq, kinds, methods, meta_version
        self.requests: dict[tuple, Msg] = requests if requests is not None else {}
        self.last = last
        self.params = params


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


class Listened:
    """A 2026-07-28 `subscriptions/listen` stream over HTTP: the request that opened it (`id` as
    parsed, its `notifications` filter) and what the server sent on it, in order (`messages`:
    (frame, method or None for the closing answer, the `_meta` subscriptionId or ABSENT, params))."""

    __slots__ = ("id", "filter", "messages")

    def __init__(self, posted: Posted):
        request = next(iter(posted.requests.values()), None)
        self.id = request.id if request is not None else mcp.ABSENT
        wanted = (posted.params or {}).get("notifications")
        self.filter = wanted if type(wanted) is dict else {}
        self.messages: list[tuple[int, str | None, Any, dict]] = []

    def add(self, seq: int, value: Any) -> None:
        if type(value) is not dict:
            return
        method = value.get("method")
        body = value.get("params") if "method" in value else value.get("result")
        body = body if type(body) is dict else {}
        meta = body.get("_meta")
        said = meta.get(SUBSCRIPTION_ID, mcp.ABSENT) if type(meta) is dict else mcp.ABSENT
        self.messages.append((seq, method if type(method) is str else None, said, body))


def headers_of_tools(value: Any) -> dict[str, dict[tuple[str, ...], tuple[str, Any]]]:
    """The `x-mcp-header` annotations of a tools/list result's tools (MCP 2026-07-28 server/tools):
    tool name -> {property path: (header name token, the property's type)}, every property
    reachable from the schema root through `properties` alone (an empty map: a tool without any)."""
    result = value.get("result") if type(value) is dict else None
    tools = result.get("tools") if type(result) is dict else None
    found = {}
    for tool in tools if type(tools) is list else ():
        if type(tool) is dict and type(tool.get("name")) is str:
            annotated: dict[tuple[str, ...], tuple[str, Any]] = {}
            _annotations(tool.get("inputSchema"), (), annotated)
            found[tool["name"]] = annotated
    return found


def _annotations(schema: Any, path: tuple[str, ...], into: dict, depth: int = 0) -> None:
    properties = schema.get("properties") if type(schema) is dict else None
    if type(properties) is not dict or depth > 32:
        return
    for key, sub in properties.items():
        if type(sub) is not dict:
            continue
        token = sub.get(X_MCP_HEADER)
        if type(token) is str:
            into[(*path, key)] = (token, sub.get("type"))
        _annotations(sub, (*path, key), into, depth + 1)


class HttpExchange:
    """An HTTP exchange as the transport rules see it: its stored row (`row`), what its request
    body carried (`seq` of that frame, the `kinds` and `methods` of its messages, a single
    message's `params`), and what answered it in the exchange (`answer`: the kind and error code
    of the JSON-RPC answer, None when none came in it). `header(name)` reads a request header."""

    __slots__ = ("row", "method", "status", "seq", "kinds", "methods", "meta_version", "params", "is_initialize",
                 "answer", "memo", "_headers")

    def __init__(self, row: dict, posted: Posted | None, init_seq: int | None, answer: tuple | None = None):
        self.row = row
        self.method, self.status = row["method"], row["status"]
        self.seq = posted.seq if posted is not None else None
        self.kinds = posted.kinds if posted is not None else ()
        self.methods = posted.methods if posted is not None else ()
        self.meta_version = posted.meta_version if posted is not None else None
        self.params = posted.params if posted is not None else None
        self.is_initialize = posted is not None and posted.seq == init_seq
        self.answer = answer
        self.memo: dict[str, Any] = {}  # what the rules work out once per exchange
        self._headers: dict[str, list[str]] | None = None

    @property
    def headers_known(self) -> bool:
        """The capture stored the request's headers (an import may not have them)."""
        return self.row.get("request_headers") is not None

    def header(self, name: str) -> list[str]:
        """The values of request header `name` (lower case), as stored."""
        if self._headers is None:
            self._headers = {}
            try:
                fields = json.loads(self.row.get("request_headers") or "[]")
            except ValueError:
                fields = []
            for field in fields if type(fields) is list else ():
                if type(field) is list and len(field) == 2 and type(field[0]) is str and type(field[1]) is str:
                    self._headers.setdefault(field[0].lower(), []).append(field[1])
        return self._headers.get(name, [])

    def header_names(self) -> list[str]:
        """The request's header names, lower case."""
        self.header("")
        return list(self._headers or ())

    def __str__(self) -> str:
        what = f"frame {self.seq}" if self.seq is not None else f"exchange {self.row['id']}"
        return f"{self.method} {self.row['url']} ({what})"



class HttpFrames:
    """SessionAnalysis's HTTP part (its state is set up in SessionAnalysis.__init__)."""

    def _http_state(self) -> None:
        self._posted: dict[str, Posted] = {}  # exchange id -> the request frame it carried
        self.http_answers: dict[str, tuple] = {}  # 2026-07-28: exchange id -> (kind, error code) of its answer
        self.param_headers: dict[str, dict] = {}  # 2026-07-28: tool name -> its x-mcp-header annotations
        self.tools_listed = False  # 2026-07-28: a tools/list result was answered in a POST's exchange
        self.listen_streams: dict[str, Listened] = {}  # 2026-07-28: exchange id -> its subscriptions/listen stream

    def http_frame(self, seq: int, ts: float, direction: str, raw: str | bytes, exchange: str | None,
                   redacted: str | None = None) -> None:
        """A frame that crossed HTTP in `exchange`: `frame()`, and for a request body, a note of
        what it carried, for the transport rules and for pairing. An answer in a POST's exchange,
        or in an HTTP error's body, can only answer what that exchange carried; an answer on a
        GET stream answers the session's outstanding requests by id. `redacted`: the frame's
        paths capture replaced (JSON text), for the security rules."""
        self._recorded = redacted
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
            if self.stateless:
                self._answered_in(exchange, seq, raw)
            return
        self.frame(seq, ts, direction, raw)
        if exchange is not None and direction == C2S and exchange not in self._posted:
            entry = self.last_sent.get(direction)
            last = self._last(direction)
            messages = last.elements if isinstance(last, Frame) else [last]
            value = messages[0].value if len(messages) == 1 else None  # a fast-path message parses here, once
            params = value.get("params") if type(value) is dict else None
            params = params if type(params) is dict else None
            meta = params.get("_meta") if params is not None else None
            meta = meta if type(meta) is dict else {}
            requests = {}
            for m in messages:
                if m.kind == REQUEST:
                    key = (direction, id_key(m.id))
                    req = self.outstanding.get(key)
                    if req is not None and req.seq == seq:
                        requests[key] = req
            self._posted[exchange] = Posted(seq, tuple(m.kind for m in messages) or (last.kind,),
                                            tuple(m.method for m in messages), meta.get(mcp.META_PROTOCOL_VERSION),
                                            requests, entry, params)

    def _answered_in(self, exchange: str, seq: int, raw: str | bytes) -> None:
        """2026-07-28: note how the answer in a POST's exchange answered (its kind and error code,
        for the header and status rules), the `x-mcp-header` annotations of a tools/list result
        that has any, and each message on a `subscriptions/listen` stream (the only frames parsed
        again: those, and tools/list results that name an annotation)."""
        posted = self._posted.get(exchange)
        if posted is not None and posted.methods == (LISTEN,):
            stream = self.listen_streams.get(exchange)
            if stream is None:
                stream = self.listen_streams[exchange] = Listened(posted)
            stream.add(seq, jsonwire.parse(raw).value)
        last = self.last_sent.get(S2C)
        if type(last) is tuple:
            kind = last[5]
        else:
            kind = last.kind if last is not None else None
        if kind == ERROR:
            value = last.value if not type(last) is tuple else jsonwire.parse(raw).value
            error = value.get("error") if type(value) is dict else None
            self.http_answers[exchange] = (ERROR, error.get("code") if type(error) is dict else None)
        elif kind == RESPONSE:
            self.http_answers[exchange] = (RESPONSE, None)
            if posted is not None and posted.methods == (TOOL_LIST,):
                self.tools_listed = True
                if (b"x-mcp-header" if type(raw) is bytes else "x-mcp-header") in raw or self.param_headers:
                    self.param_headers.update(headers_of_tools(jsonwire.parse(raw).value))

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
        row = [self.session_id, seq, None, direction, kind, id_json, _storable(method) if type(method) is str else None,
               None, None]
        self._rows.append(row)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self._reading is not None:
            self._secure(seq, ts, direction, raw, [row], value if parsed.plain else UNREAD)

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
            ex = HttpExchange(row, self._posted.get(row["id"]), init_seq, self.http_answers.get(row["id"]))
            for rule in self._dispatch.exchange:
                hit = rule.check(ex, self)
                if hit is not None:
                    self.add(rule, hit, ex.seq, None)
            if ex.is_initialize and row["assigned_session"] and self.assigned_session is None:
                self.assigned_session, self.assigned_at = row["assigned_session"], row["response_at"] or row["started_at"]
