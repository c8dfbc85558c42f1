"""One session's analysis, frame by frame in observed order: parse, classify, pair requests and
responses in both directions, follow the lifecycle, cancellation and progress, and run every
registered rule (analyzer/rules). Pure: frames in, message rows and findings out; nothing here
touches SQLite (analyzer/engine.py does).

The state held grows with outstanding requests and with the ids a session has used (a
handshake-era id may never be reused), never with frames: a request's row waits here only until
its response comes (then both rows are emitted with the pair and the latency)."""

from __future__ import annotations

import gc
import math
from decimal import Decimal
from typing import Any

from mcptap.analysis import mcp, rules

from mcptap.wire import jsonwire
from mcptap.analysis.classify import (BATCH, ERROR, INVALID, NOTIFICATION, REQUEST, RESPONSE, UNPARSEABLE, VALID_ID,
                               Signature, by_key, classify)
from mcptap.wire.jsonwire import NumberText
from mcptap.analysis.latency import LatencySketch
from mcptap.analysis.rules import Hit, Rule
from mcptap.wire.textsafe import storable

try:  # the native envelope scanner (setup.py builds it; without it every frame takes the exact path)
    from mcptap import _wirescan
except ImportError:  # pragma: no cover - a build without a C compiler
    _wirescan = None

C2S, S2C = mcp.C2S, mcp.S2C
OTHER = mcp.OTHER
_MISSING = mcp.ABSENT
_ITSELF = object()
_SCALAR, _ARRAY = Signature("scalar"), Signature("array")
_NO_META: dict = {}

# messages row: session_id, frame_seq, idx, direction, kind, id (JSON), method, paired_frame, latency_s
MessageRow = list
# findings row: session_id, frame_seq, idx, code, severity, message, related_frame
FindingRow = tuple


class Msg:
    """One JSON-RPC message: a whole frame, or one element of a batch. A request is also its own
    record of pairing (its response, cancellation, progress token). A plain class with defaults
    on the class: a message sets only what it has, which keeps a million of them cheap."""

    method: str | None = None
    id: Any = _MISSING
    row: MessageRow | None = None
    # facts the session core works out, for the rules
    pairing: str | None = None
    _request: "Msg | None" = None
    related: int | None = None
    fact: str | None = None
    probe: bool = False  # a 2026-07-28 request sent before initialize by a dual-era client
    # a request's own record
    id_json: str | None = None  # its id as written (JSON text), when it has one
    cancelled: int | None = None  # seq of the notifications/cancelled naming it
    rejected: bool = False  # its batch was refused as a whole (where batches are forbidden)
    token: Any = None  # progress token key it carried
    stream_closed: bool = False  # 2026-07-28 over HTTP: its client closed the exchange before the answer (cancelled)
    log_level: bool = False  # 2026-07-28: it set _meta logLevel
    batch: "Frame | None" = None  # the batch it came in

    def __init__(self, seq: int, idx: int | None, ts: float, direction: str, value: Any, sig: Signature, kind: str,
                 frame: "Frame"):
        self.seq, self.idx, self.ts, self.direction = seq, idx, ts, direction
        self.value, self.sig, self.kind, self.frame = value, sig, kind, frame

    @property
    def request(self) -> "Msg | None":
        """For a response: the request it answers; for a request: itself (kept as a mark, not a
        reference to itself: a million requests make no cycles for the collector to find)."""
        request = self._request
        return self if request is _ITSELF else request

    @request.setter
    def request(self, value: "Msg | None") -> None:
        self._request = _ITSELF if value is self else value

    @property
    def has_id(self) -> bool:
        return self.id is not _MISSING

    @property
    def params(self) -> Any:
        return self.value.get("params") if type(self.value) is dict else None

    def meta(self) -> dict:
        params = self.params
        meta = params.get("_meta") if type(params) is dict else None
        return meta if type(meta) is dict else {}


Req = Msg  # a request, in its role as the record its response is paired with


class WireMsg(Msg):
    """A message the fast path read from its envelope alone (analyzer/_wirescan.c): everything
    the core needs is set, and its value is parsed, exactly, only if a rule asks for it."""

    idx = None
    frame = None

    def __init__(self, seq: int, ts: float, direction: str, raw: bytes, sig: Signature, kind: str, method,
                 ident, id_json, row):
        self.seq, self.ts, self.direction, self.raw, self.sig, self.kind = seq, ts, direction, raw, sig, kind
        self.method, self.id, self.id_json, self.row = method, ident, id_json, row
        if kind is REQUEST:
            self.pairing = "new"

    @property
    def request(self) -> Msg | None:
        """A request is its own record (a property, not `self.request = self`: no reference cycle
        for the garbage collector to find, a million times)."""
        return self if self.kind is REQUEST else None

    @property
    def value(self) -> Any:
        return jsonwire.parse(self.raw).value


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


class Frame:
    """One frame: its parse, and its messages (one, or a batch's elements)."""

    __slots__ = ("seq", "ts", "direction", "parsed", "value", "sig", "kind", "elements")

    def __init__(self, seq, ts, direction, parsed, value, sig, kind):
        self.seq, self.ts, self.direction, self.parsed = seq, ts, direction, parsed
        self.value, self.sig, self.kind = value, sig, kind
        self.elements: list[Msg] = []


def id_key(value: Any) -> tuple:
    """Exact identity of an id for pairing: type and value as written (7, "7" and 7.0 differ)."""
    kind = type(value)
    if kind is int:
        return ("n", value)
    if kind is str:
        return ("s", value)
    if kind is NumberText or kind is float:
        return ("t", jsonwire.to_json(value))
    return ("x", jsonwire.to_json(value))


def loose_key(value: Any) -> str | None:
    """Identity across types, to catch `7` answered as `"7"` or `7.0`."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return str(int(value)) if value.is_integer() else jsonwire.to_json(value)
    if type(value) is NumberText:
        if value.is_integer_literal:
            return value.text
        if value.is_integral:
            return value.integral_text()
        return value.text
    return None


def _number(value: Any) -> int | float | Decimal | None:
    """A progress value, exact and comparable whatever its size (`1e400`, 400 digits): an int or
    float as parsed, a number kept as written as its Decimal."""
    if type(value) is int or type(value) is float:
        return value
    if type(value) is NumberText:
        return value.exact
    return None


class SessionAnalysis:
    """Feed frames with `frame()` in seq order, then `end()`. Rows come out of `take_rows()`
    and `take_findings()` as they are ready."""

    def __init__(self, session_id: str, *, revision: str | None, revision_source: str, stdio: bool,
                 ended: bool, policy=None, transport: str | None = None, exchanges: list[dict] | None = None,
                 exact_only: bool = False, cut: dict[int, int] | None = None):
        """`exact_only`: every frame through the exact parser (analyzer/wire/jsonwire.py), never the
        fast path; the reference the fast path is tested against. `cut`: the frames stored cut
        at the capture's --max-frame (seq -> full size): each is a `frame-truncated` finding,
        not parsed."""
        self.session_id = session_id
        self.cut = cut or None
        self._scan = _wirescan.scan if _wirescan is not None and not exact_only else None
        self.revision = revision if revision in mcp.KNOWN_REVISIONS else None
        self.declared_revision = revision
        self.revision_source = revision_source
        self.handshake = self.revision in mcp.HANDSHAKE_REVISIONS
        self.stateless = self.revision in mcp.STATELESS_REVISIONS
        self.stdio = stdio
        self.transport = transport
        self.ended = ended
        # HTTP: the session's exchanges (store rows, in start order) and what each request carried
        self.exchanges = exchanges
        self.http_flavour = (("legacy-sse" if any(e.get("endpoint") for e in exchanges) else "streamable")
                             if exchanges else None)
        self._posted: dict[str, Posted] = {}  # exchange id -> the request frame it carried
        self._exchange_rows = {e["id"]: e for e in exchanges or ()}
        # HTTP: what the answer being analysed may answer (its exchange's body; None: the session's
        # outstanding requests by id, as on a GET stream or stdio), and whether it is an HTTP error's body
        self._scope: Posted | None = None
        self._scope_error = False
        self.init_result_ts: float | None = None
        self.assigned_session: str | None = None  # the Mcp-Session-Id the initialize answer assigned
        self.assigned_at: float = 0.0  # when
        self.policy = policy
        self.frames = 0
        self.kinds: dict[str, int] = {}
        self.severities = {"error": 0, "warning": 0, "info": 0}
        self._rows: list[MessageRow] = []
        self._findings: list[FindingRow] = []
        # pairing
        self.outstanding: dict[tuple, Req] = {}
        self.answered: dict[tuple, tuple[int, int]] = {}  # key -> (request seq, response seq)
        self.last_sent: dict[str, Msg | Frame | tuple] = {}  # a tuple: a fast-path message, built if asked for
        # lifecycle (handshake era)
        self.client_requests = 0
        self.init_request: Req | None = None
        self.init_requested_version: Any = None
        self.init_result_seq: int | None = None
        self.server_version: Any = None
        self.client_caps: Any = None
        self.server_caps: Any = None
        self.initialized_seq: int | None = None
        self.once: set[str] = set()
        self._gates: dict[str, bool] = {}  # method -> its capability gate cannot be closed (until caps change)
        self._quiet: dict[tuple, bool] = {}  # (method, direction, is request) -> no rule looks (`_quiet_method`)
        # progress
        self.tokens: dict[tuple, list] = {}  # (request direction, token key) -> [Req, last value]
        self.done_tokens: dict[tuple, int] = {}  # token of an answered request -> response seq
        # service response time per method (Wireshark's SRT): calls, errors, unanswered, latencies
        self.method_stats: dict[str, dict] = {}
        self._by_method: dict[str | None, tuple[str | None, dict]] = {}  # method as written -> (name, record)
        self._dispatch = _Dispatch.for_revision(self.revision)
        self._clean = self._dispatch.clean
        self._progress_quiet = not self._dispatch.rules("notification", ("progress:ok",))
        if self.revision is None:
            self.hit_once("revision-unknown", None, Hit(
                "the MCP revision could not be established (no initialize exchange and no per-request "
                "protocol version): judged by base JSON-RPC 2.0 only"
                + (f" (the session named {revision!r}, which is not a known revision)" if revision else "")))

    # -- output ------------------------------------------------------------------------------

    def take_rows(self) -> list[MessageRow]:
        rows, self._rows = self._rows, []
        return rows

    def take_findings(self) -> list[FindingRow]:
        found, self._findings = self._findings, []
        return found

    def add(self, rule: Rule, hit: Hit, seq: int | None, idx: int | None) -> None:
        severity = hit.severity or rule.severity_for(self.revision)
        if self.policy is not None:
            severity = self.policy.severity(rule.code, severity)
            if severity is None:
                return
        self.severities[severity] += 1
        self._findings.append((self.session_id, hit.seq if hit.seq is not None else seq,
                               hit.idx if hit.seq is not None else idx, rule.code, severity, _storable_uncached(hit.message),
                               hit.related))

    def first(self, what: str) -> bool:
        """True the first time a rule asks about `what` in this session (for once-only findings)."""
        if what in self.once:
            return False
        self.once.add(what)
        self._lifecycle_changed()
        return True

    def hit_once(self, code: str, seq: int | None, hit: Hit) -> None:
        if code not in self.once:
            self.once.add(code)
            self._lifecycle_changed()
            self.add(rules.RULES[code], hit, seq, None)

    def _lifecycle_changed(self) -> None:
        """What the methods' rules look at changed (the handshake's progress, the capabilities,
        a once-only finding given): the quiet methods are worked out again."""
        self._quiet.clear()
        self._gates = {}

    # -- frames ------------------------------------------------------------------------------

    def http_frame(self, seq: int, ts: float, direction: str, raw: str | bytes, exchange: str | None) -> None:
        """A frame that crossed HTTP in `exchange`: `frame()`, and for a request body, a note of
        what it carried, for the transport rules and for pairing. An answer in a POST's exchange,
        or in an HTTP error's body, can only answer what that exchange carried; an answer on a
        GET stream answers the session's outstanding requests by id."""
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

    def feed(self, rows: list[tuple]) -> None:
        """`frame()` for each (seq, ts, direction, raw) row, in order."""
        collecting = gc.isenabled()
        gc.disable()  # rows and records, not cycles: the collector would only walk them again and again
        try:
            if self.cut is not None or self._scan is None:
                frame = self.frame
                for row in rows:
                    frame(*row)
                return
            self.frames += len(rows)  # `frame()`, without a call of its own per frame
            scan, fast, exact = self._scan, self._fast, self._exact
            for seq, ts, direction, raw in rows:
                envelope = scan(raw)
                if envelope is None or not fast(seq, ts, direction, raw, envelope):
                    exact(seq, ts, direction, raw)
        finally:
            if collecting:
                gc.enable()

    def frame(self, seq: int, ts: float, direction: str, raw: str | bytes) -> None:
        self.frames += 1
        if self.cut is not None and seq in self.cut:
            self._cut_frame(seq, ts, direction, raw)
            return
        if self._scan is not None:
            envelope = self._scan(raw)
            if envelope is not None and self._fast(seq, ts, direction, raw, envelope):
                return
        self._exact(seq, ts, direction, raw)

    def _exact(self, seq: int, ts: float, direction: str, raw: str | bytes) -> None:
        """A frame through the exact parser (analyzer/wire/jsonwire.py), whatever it holds."""
        parsed = jsonwire.parse(raw)
        value = parsed.value
        kinds = self.kinds
        if parsed.error is None and type(value) is dict:  # one message: the common case, kept lean
            sig, kind = classify(value)
            msg = Msg(seq, None, ts, direction, value, sig, kind, None)
            self._fill(msg, value, sig, kind)
            self._observe(msg)
            kinds[kind] = kinds.get(kind, 0) + 1
            self.last_sent[direction] = msg
            tags = [kind] if kind == INVALID else None
            if msg.pairing == "batch-refused" or (kind != REQUEST and msg.request is not None
                                                  and msg.request.batch is not None):
                tags = (tags or []) + ["answers-batch"]
            if parsed.duplicate_keys:
                tags = (tags or []) + ["duplicates"]
            if tags:
                frame = Frame(seq, ts, direction, parsed, value, sig, kind)
                frame.elements = [msg]
                self._frame_rules(frame, tags)
            return
        if parsed.error is not None:
            frame = Frame(seq, ts, direction, parsed, None, _SCALAR, UNPARSEABLE)
            self._rows.append([self.session_id, seq, None, direction, UNPARSEABLE, None, None, None, None])
            tags = [UNPARSEABLE]
        elif type(value) is list:
            kind = BATCH if value else INVALID
            frame = Frame(seq, ts, direction, parsed, value, _ARRAY, kind)
            self._rows.append([self.session_id, seq, None, direction, kind, None, None, None, None])
            for i, element in enumerate(value):
                sig, element_kind = classify(element)
                msg = Msg(seq, i, ts, direction, element, sig, element_kind, frame)
                self._fill(msg, element, sig, element_kind)
                frame.elements.append(msg)
            for msg in frame.elements:
                self._observe(msg)
            tags = [kind]
            if any(m.pairing == "batch-refused" or (m.request is not None and m.request.batch is not None
                                                     and m.kind != REQUEST) for m in frame.elements):
                tags.append("answers-batch")
        else:  # a bare string, number, boolean or null
            sig, kind = classify(value)
            frame = Frame(seq, ts, direction, parsed, value, sig, kind)
            msg = Msg(seq, None, ts, direction, value, sig, kind, None)
            self._fill(msg, value, sig, kind)
            frame.elements = [msg]
            tags = [kind]
        if parsed.duplicate_keys:
            tags.append("duplicates")
        kinds[frame.kind] = kinds.get(frame.kind, 0) + 1
        self._frame_rules(frame, tags)
        self.last_sent[direction] = frame if frame.kind in (BATCH, UNPARSEABLE) or not frame.elements else frame.elements[0]

    def _cut_frame(self, seq: int, ts: float, direction: str, raw: str | bytes) -> None:
        """A frame stored cut at the limit: what is stored is not the message, so it is not
        parsed; its kind is `unparseable` and the finding says it was cut."""
        frame = Frame(seq, ts, direction, None, None, _SCALAR, UNPARSEABLE)
        frame.value = len(raw)  # the bytes kept
        self._rows.append([self.session_id, seq, None, direction, UNPARSEABLE, None, None, None, None])
        self.kinds[UNPARSEABLE] = self.kinds.get(UNPARSEABLE, 0) + 1
        self._frame_rules(frame, ["truncated"])
        self.last_sent[direction] = frame

    def _fast(self, seq: int, ts: float, direction: str, raw: bytes, envelope: tuple) -> bool:
        """The common frame, from its envelope alone (analyzer/_wirescan.c): one well-formed
        request, notification, response or error that no rule needs to see. The same state
        changes and rows as the exact path, without building the frame's value. False, before
        anything has changed, for anything else: the exact path then takes the frame."""
        key, method, ident, id_json, meta, params, result_type = envelope
        shape = self._clean.get(key)
        if shape is None:
            shape = self._dispatch.clean_shape(key)
        if not shape:
            return False
        sig, kind = shape
        if kind is REQUEST:
            key = (direction, ("n", ident) if type(ident) is int else ("s", ident))
            if key in self.outstanding or key in self.answered or method == "initialize":
                return False
            if meta is None:
                meta = _NO_META
            elif self.handshake and direction == C2S and self.init_request is None and mcp.META_PROTOCOL_VERSION in meta:
                return False  # a dual-era client's probe
            quiet = self._quiet.get((method, direction, True))
            if quiet is None:
                quiet = self._quiet_method(method, direction, True)
            if not quiet or (self.stateless and direction == C2S and mcp.missing_meta(meta)):
                return False
            row = [self.session_id, seq, None, direction, REQUEST, id_json, method, None, None]
            msg = WireMsg(seq, ts, direction, raw, sig, REQUEST, method, ident, id_json, row)
            self._await(msg, key, meta)
            if direction == C2S:
                self.client_requests += 1
            self.last_sent[direction] = msg
        elif kind is NOTIFICATION:
            if method == "notifications/cancelled" or method == "notifications/initialized":
                return False
            quiet = self._quiet.get((method, direction, False))
            if quiet is None:
                quiet = self._quiet_method(method, direction, False)
            if not quiet or self._log_unasked(method, direction):
                return False
            if method == "notifications/progress":
                progress = self._progress(direction, params if params is not None else _NO_META)
                if (progress[1] is not None and progress[1].batch is not None) or self._dispatch.rules(
                        "notification", (progress[0],)):
                    return False  # a rule looks at it (or, answering a batch's request, the frame rules do)
                _progressed(progress)
            self._rows.append([self.session_id, seq, None, direction, NOTIFICATION, None, method, None, None])
            self.last_sent[direction] = (seq, ts, direction, raw, sig, NOTIFICATION, method, ident, id_json)
        elif kind is RESPONSE or kind is ERROR:
            key = (OTHER[direction], ("n", ident) if type(ident) is int else ("s", ident))
            req = self.outstanding.get(key)
            if (req is None or req is self.init_request or req.batch is not None
                    or (self._scope is not None and self._scope.requests.get(key) is not req)
                    or (req.cancelled is not None and req.cancelled < seq)
                    or (self.stateless and kind is RESPONSE and mcp.bad_result_type(result_type))):
                return False
            row = [self.session_id, seq, None, direction, kind, id_json, None, None, None]
            self._rows.append(row)
            del self.outstanding[key]
            self._answer(row, kind, seq, ts, key, req)
            self.last_sent[direction] = (seq, ts, direction, raw, sig, kind, None, ident, id_json)
        else:
            return False
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return True

    def _quiet_method(self, method: str, direction: str, is_request: bool) -> bool:
        """No rule looks at this method sent this way as this kind, as things stand (kept until
        `_lifecycle_changed`: the handshake's progress, the capabilities, a once-only finding)."""
        facts: list[str] = []
        self._method_facts(method, direction, False, is_request, facts)
        quiet = self._quiet[(method, direction, is_request)] = not (
            facts and self._dispatch.rules("request" if is_request else "notification", tuple(facts)))
        return quiet

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

    def _frame_rules(self, frame: Frame, tags: list[str]) -> None:
        for rule in self._dispatch.frame_rules(tuple(tags)):
            hit = rule.check(frame, self)
            if hit is not None:
                self.add(rule, hit, frame.seq, None)

    def _fill(self, msg: Msg, value: Any, sig: Signature, kind: str) -> None:
        """A message's method, id, envelope findings and its messages row."""
        ident = None
        method = None
        if type(value) is dict:
            method = value.get("method")
            if type(method) is str:
                msg.method = method
                method = _storable(method)
            else:
                method = None
            if "id" in value:
                ident = value["id"]
                msg.id = ident
                ident = msg.id_json = str(ident) if type(ident) is int else jsonwire.to_json(ident)
        found = self._dispatch.envelope(sig)
        if found:
            for rule, hit in found:
                self.add(rule, hit, msg.seq, msg.idx)
        row = msg.row = [self.session_id, msg.seq, msg.idx, msg.direction, kind, ident, method, None, None]
        if kind != REQUEST:  # a request's row waits for its response (the pair and the latency)
            self._rows.append(row)

    # -- messages ----------------------------------------------------------------------------

    def _observe(self, msg: Msg) -> None:
        kind = msg.kind
        facts: list[str] = []
        if kind == REQUEST:
            self._request(msg)
            event = "request"
            if msg.pairing != "new":
                facts.append(msg.pairing)
            self._method_facts(msg.method, msg.direction, msg.probe, True, facts)
            if self._log_unasked(msg.method, msg.direction):
                facts.append("gated")
            if self.stateless and msg.direction == C2S and mcp.missing_meta(msg.meta()):
                facts.append("meta-missing")
        elif kind == NOTIFICATION:
            self._notification(msg)
            event = "notification"
            if msg.fact is not None:
                facts.append(msg.fact)
            self._method_facts(msg.method, msg.direction, msg.probe, False, facts)
            if self._log_unasked(msg.method, msg.direction):
                facts.append("gated")
        elif kind in (RESPONSE, ERROR) or (kind == INVALID and msg.sig.method == "absent" and msg.sig.id in VALID_ID):
            self._response(msg)  # a malformed response with a readable id still answers its request
            event = "response"
            if msg.pairing != "matched":
                facts.append(msg.pairing)
            req = msg.request
            if req is not None:
                if req.cancelled is not None and req.cancelled < msg.seq:
                    facts.append("after-cancel")
                if req is self.init_request:
                    facts.append("init-response")
            if self.stateless and kind == RESPONSE and mcp.bad_result_type(_result_type(msg.value)):
                facts.append("result-type")
        else:
            return
        if facts:
            for rule in self._dispatch.rules(event, tuple(facts)):
                hit = rule.check(msg, self)
                if hit is not None:
                    self.add(rule, hit, msg.seq, msg.idx)
        if msg.method == "initialize" and kind == REQUEST and msg.direction == C2S and self.init_request is None:
            params = msg.params if type(msg.params) is dict else {}
            self.init_request = msg.request
            self.init_requested_version = params.get("protocolVersion")
            self.client_caps = params.get("capabilities")
            self._lifecycle_changed()
        elif kind == NOTIFICATION and msg.method == "notifications/initialized" and msg.direction == C2S:
            if self.initialized_seq is None:
                self.initialized_seq = msg.seq
                self._lifecycle_changed()
        elif (kind == RESPONSE and msg.direction == S2C and msg.request is not None
              and msg.request is self.init_request and self.init_result_seq is None):
            result = msg.value.get("result")
            result = result if type(result) is dict else {}
            self.init_result_seq = msg.seq
            self.init_result_ts = msg.ts
            self.server_version = result.get("protocolVersion")
            self.server_caps = result.get("capabilities")
            self._lifecycle_changed()
        if msg.direction == C2S and kind == REQUEST and not msg.probe:
            self.client_requests += 1

    def _method_facts(self, method: str, direction: str, probe: bool, is_request: bool, facts: list[str]) -> None:
        """Facts about a request's or notification's method, for the MCP layer's rules. A fact is
        added only where its rules could find something."""
        if self.revision is None:
            return
        verdict = mcp.method_verdict("2026-07-28" if probe else self.revision, direction, method, is_request)
        if verdict is not None:
            facts.append(verdict)
        if self.handshake:
            if self.init_result_seq is None or self.initialized_seq is None:
                facts.append("early")
            elif (direction == C2S and self.server_version != self.init_requested_version
                  and "version-went-on" not in self.once):
                facts.append("version-mismatch")
            if method in mcp.CAPABILITY_GATES and not self._gate_open(method):
                facts.append("gated")

    def _log_unasked(self, method: str, direction: str) -> bool:
        """2026-07-28: a log notification from the server while no request in progress set _meta
        logLevel (capability-not-negotiated looks at it)."""
        return (self.stateless and method == "notifications/message" and direction == S2C
                and not any(r.log_level for r in self.outstanding.values() if r.direction == C2S))

    def _gate_open(self, method: str) -> bool:
        """No capability the method needs can be missing (known until the capabilities change)."""
        open_ = self._gates.get(method)
        if open_ is None:
            open_ = self._gates[method] = mcp.gate_missing(method, self.revision, self.server_caps,
                                                           self.client_caps) is None
        return open_

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
            self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, req)
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
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, other_key, req)
                    return
        msg.pairing = "unknown"

    def _answer(self, row: MessageRow, kind: str, seq: int, ts: float, key: tuple, req: Req) -> None:
        """The response (its messages `row`, `kind`, frame `seq` and time `ts`) answers `req`."""
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
                self._answer(msg.row, msg.kind, msg.seq, msg.ts, own_key, req)
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
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, req)
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
                    self._answer(msg.row, msg.kind, msg.seq, msg.ts, key, last.request)
        elif last.kind == INVALID:
            msg.pairing, msg.related = "unreadable", last.seq
        else:
            msg.pairing = "unknown"

    def _notification(self, msg: Msg) -> None:
        params = msg.params if type(msg.params) is dict else {}
        if msg.method == "notifications/cancelled":
            target = params.get("requestId", _MISSING)
            if target is _MISSING:
                msg.fact = "cancel:no-request-id"
                return
            key = (msg.direction, id_key(target))
            req = self.outstanding.get(key)
            init = self.init_request
            if init is not None and (req is init or (req is None and key == (init.direction, id_key(init.id)))):
                # the initialize request MUST NOT be cancelled, at any time
                msg.fact, msg.request, msg.related = "cancel:initialize", init, init.seq
                if req is init and init.cancelled is None:
                    init.cancelled = msg.seq
            elif req is not None:
                msg.fact, msg.request, msg.related = "cancel:ok", req, req.seq
                if req.cancelled is None:
                    req.cancelled = msg.seq
            elif key in self.answered:
                msg.fact, msg.related = "cancel:answered", self.answered[key][1]
            elif (OTHER[msg.direction], id_key(target)) in self.outstanding or (OTHER[msg.direction], id_key(target)) in self.answered:
                msg.fact = "cancel:other-side"
            else:
                msg.fact = "cancel:unknown"
        elif msg.method == "notifications/progress":
            progress = self._progress(msg.direction, params)
            msg.fact, msg.request, msg.related = progress[:3]
            _progressed(progress)

    def _progress(self, direction: str, params: dict) -> tuple:
        """(fact, request, related frame, token entry, value) of a progress notification sent
        `direction`; the token's last value changes only with `_progressed`."""
        token = params.get("progressToken", _MISSING)
        if token is _MISSING:
            return "progress:no-token", None, None, None, None
        key = (OTHER[direction], id_key(token))
        entry = self.tokens.get(key)
        if entry is None:
            done = self.done_tokens.get(key)
            fact = "progress:after-completion" if done is not None else "progress:unknown"
            return fact, None, done, None, None
        req, last = entry
        value = _number(params.get("progress"))
        fact = "progress:not-increasing" if value is not None and last is not None and value <= last else "progress:ok"
        return fact, req, req.seq, entry, value

    # -- the end -----------------------------------------------------------------------------

    def end(self) -> None:
        if self.exchanges and self.stateless:
            self._streams_closed()
        if self.exchanges and self._dispatch.exchange:
            self._exchange_rules()
        for rule in self._dispatch.end:
            for hit in rule.check(self) or ():
                self.add(rule, hit, hit.seq, hit.idx)
        for req in self.outstanding.values():
            if req.row is not None:
                self._rows.append(req.row)
                req.row = None
            if req.cancelled is None and not req.rejected and not req.stream_closed:
                self._stats(req.method)["unanswered"] += 1

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
            ex = HttpExchange(row, self._posted.get(row["id"]), init_seq)
            for rule in self._dispatch.exchange:
                hit = rule.check(ex, self)
                if hit is not None:
                    self.add(rule, hit, ex.seq, None)
            if ex.is_initialize and row["assigned_session"] and self.assigned_session is None:
                self.assigned_session, self.assigned_at = row["assigned_session"], row["response_at"] or row["started_at"]

    def _stats(self, method: str | None) -> dict:
        return (self._by_method.get(method) or self._method_record(method))[1]

    def _method_record(self, method: str | None) -> tuple[str | None, dict]:
        """A method as written: its storable name (lone surrogates escaped: it is printed and
        stored) and its service response time record in `method_stats` (remembered in
        `_by_method` for the next time)."""
        name = _storable(method) if method is not None else None
        stats = self.method_stats.get(name)
        if stats is None:
            stats = self.method_stats[name] = {"calls": 0, "errors": 0, "unanswered": 0, "latencies": LatencySketch()}
        known = (name, stats)
        if len(self._by_method) < 10_000:
            self._by_method[method] = known
        return known

    def summary(self) -> dict:
        return {"id": self.session_id, "revision": self.revision or self.declared_revision,
                "revision_source": self.revision_source, "frames": self.frames, "kinds": dict(self.kinds),
                "findings": dict(self.severities)}


def _progressed(progress: tuple) -> None:
    entry, value = progress[3], progress[4]
    if value is not None:
        entry[1] = value if entry[1] is None else max(value, entry[1])


def _result_type(value: Any) -> Any:
    result = value.get("result") if type(value) is dict else None
    return result.get("resultType", _MISSING) if type(result) is dict else _MISSING


if _wirescan is not None and _wirescan.META_NAMES != (mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES,
                                                      mcp.META_LOG_LEVEL):
    _wirescan = None  # a build from other sources: the exact path alone is right, only slower
if _wirescan is not None:
    _wirescan.configure(_MISSING, frozenset({"notifications/progress", "notifications/cancelled"}), NumberText)

_STORABLE: dict[str, str] = {}


def _storable(text: str) -> str:
    """Text SQLite can store: lone surrogates (legal in JSON escapes) are written escaped."""
    known = _STORABLE.get(text)
    if known is not None:
        return known
    if len(_STORABLE) < 10_000:
        known = _STORABLE[text] = _storable_uncached(text)
        return known
    return _storable_uncached(text)


_storable_uncached = storable
_isfinite = math.isfinite


class _Dispatch:
    """Which rules run for which facts, for one revision (computed once per revision; the
    lists for each combination of facts are cached, so a frame costs a dictionary lookup)."""

    _cache: dict[str | None, "_Dispatch"] = {}

    def __init__(self, revision: str | None):
        registry = rules.load()
        active = [r for r in registry.values() if r.layer == "jsonrpc" or revision is not None]
        self.revision = revision
        self.end = [r for r in active if "end" in r.on]
        self._frame = [r for r in active if "frame" in r.on]
        self._envelope_rules = [r for r in active if "envelope" in r.on]
        self._by_event = {e: [r for r in active if e in r.on] for e in ("request", "notification", "response")}
        self.exchange = [r for r in active if "exchange" in r.on]
        self._envelope: dict[Signature, list[tuple[Rule, Hit]]] = {}
        self._lists: dict[tuple, list[Rule]] = {}
        self.clean: dict[tuple, tuple[Signature, str] | bool] = {}  # shape key -> (sig, kind), False: a rule looks

    @classmethod
    def for_revision(cls, revision: str | None) -> "_Dispatch":
        dispatch = cls._cache.get(revision)
        if dispatch is None:
            dispatch = cls._cache[revision] = cls(revision)
        return dispatch

    def clean_shape(self, key: tuple) -> tuple[Signature, str] | bool:
        """(signature, kind) of an envelope shape no envelope rule has anything to say about;
        False when one has."""
        sig, kind = by_key(key)
        found = self.clean[key] = (sig, kind) if not self.envelope(sig) else False
        return found

    def envelope(self, sig: Signature) -> list[tuple[Rule, Hit]]:
        found = self._envelope.get(sig)
        if found is None:
            found = []
            for rule in self._envelope_rules:
                result = rule.check(sig)
                if result is not None:
                    found.append((rule, result if isinstance(result, Hit) else Hit(result)))
            self._envelope[sig] = found
        return found

    def rules(self, event: str, facts: tuple[str, ...]) -> list[Rule]:
        key = (event, facts)
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = _subscribed(self._by_event[event], facts)
        return found

    def frame_rules(self, tags: tuple[str, ...]) -> list[Rule]:
        key = ("frame", tags)
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = _subscribed(self._frame, tags)
        return found


def _subscribed(candidates: list[Rule], facts: tuple[str, ...]) -> list[Rule]:
    """The rules that subscribe to any of `facts` (worked out once per combination of facts)."""
    assert set(facts) <= rules.FACTS.keys(), f"facts {set(facts) - rules.FACTS.keys()} are not declared"
    return [r for r in candidates if any(f in r.when for f in facts)]
