"""One session's analysis, frame by frame in observed order: parse, classify, pair requests and responses in both
directions, follow the lifecycle, cancellation and progress, and run every registered rule (analyzer/analysis/rules/),
the security group's in the same pass (`security=True`). Pure: frames in, message rows and findings out; nothing here
touches SQLite (analyzer/engine/ does). The core in parts, each a module: the records it keeps (messages), pairing,
lifecycle, notifications (cancellation and progress), statistics, HTTP exchanges, the rules' dispatch, each message
against its schemas (results), the security reading's feed (security/feed); here, the frames taken in, on the exact
path and the fast one. The state held grows with outstanding requests and with the ids a session has used (a
handshake-era id may never be reused), never with frames: a request's row waits here only until its response comes
(then both rows are emitted with the pair and the latency)."""

from __future__ import annotations

import gc
from typing import Any

from mcptap.analysis import mcp
from mcptap.analysis.classify import (BATCH, ERROR, INVALID, NOTIFICATION, REQUEST, RESPONSE, UNPARSEABLE,
                                      Signature, classify)
from mcptap.analysis.dispatch import _Dispatch
from mcptap.analysis.exchanges import (CLIENT_GONE, NOTHING_POSTED, HttpExchange, HttpFrames, Posted,  # noqa: F401
                                       client_gone, http_error)
from mcptap.analysis.lifecycle import DEPRECATED, DISCOVER, Lifecycle
from mcptap.analysis.messages import (_MISSING, UNREAD, Finding, FindingRow, Frame, MessageRow, Msg, Req, WireMsg,  # noqa: F401
                                      id_key, loose_key)
from mcptap.analysis.notifications import Notifications, _progressed
from mcptap.analysis.observe import Observations
from mcptap.analysis.pairing import _NO_META, Pairing
from mcptap.analysis.results import MessageChecks
from mcptap.analysis.rules import Hit, Rule
from mcptap.analysis.security.feed import SecurityFeed
from mcptap.analysis.security.reading import METHODS as _SECURE
from mcptap.analysis.statistics import TOOL_CALL, Statistics, _storable, _storable_uncached, read_answer
from mcptap.wire import jsonwire
from mcptap.wire.jsonwire import NumberText

try:  # the native envelope scanner (setup.py builds it; without it every frame takes the exact path)
    from mcptap import _wirescan
except ImportError:  # pragma: no cover - a build without a C compiler
    _wirescan = None

C2S, S2C, OTHER = mcp.C2S, mcp.S2C, mcp.OTHER
_LOGGING = DEPRECATED + "Logging"
_SCALAR, _ARRAY = Signature("scalar"), Signature("array")


class SessionAnalysis(Observations, Pairing, Lifecycle, Notifications, Statistics, HttpFrames, SecurityFeed):
    """Feed frames with `frame()` in seq order, then `end()`. Rows come out of `take_rows()` and `take_findings()`."""

    def __init__(self, session_id: str, *, revision: str | None, revision_source: str, stdio: bool,
                 ended: bool, policy=None, transport: str | None = None, exchanges: list[dict] | None = None,
                 exact_only: bool = False, cut: dict[int, int] | None = None, security: bool = False):
        """`exact_only`: every frame through the exact parser (analyzer/wire/jsonwire.py), never the fast path; the
        reference the fast path is tested against. `cut`: the frames stored cut at the capture's --max-frame (seq ->
        full size): each is a `frame-truncated` finding, not parsed. `security`: the security rules judge the
        session in the same pass (analyzer/analysis/security/feed.py)."""
        self.session_id = session_id
        self.cut = cut or None
        self._scan = _SCAN if _wirescan is not None and not exact_only else None
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
        self._http_state()  # what each exchange carried and how it was answered (HttpFrames)
        self.refused_seqs: dict[str, int] = {}  # exchange id -> the request frame it refused 401/403
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
        self.server_caps: Any = None  # initialize's result, or 2026-07-28 server/discover's
        self.client_extensions: set[str] = set()  # 2026-07-28: the extensions a client request declared
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
        self._check, self._check_exact = MessageChecks.hooks(self.revision, policy, self.add)  # each message's schemas
        if security:
            self._security(session_id, policy)
        if self.revision is None:
            self.hit_once("revision-unknown", None, Hit(
                "the MCP revision could not be established (no initialize exchange and no per-request "
                "protocol version): judged by base JSON-RPC 2.0 only"
                + (f" (the session named {revision!r}, which is not a known revision)" if revision else "")))

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
        self._findings.append(Finding(self.session_id, hit.seq if hit.seq is not None else seq,
                                      hit.idx if hit.seq is not None else idx, rule.code, severity,
                                      _storable_uncached(hit.message), hit.related))

    def feed(self, rows: list[tuple]) -> None:
        """`frame()` for each (seq, ts, direction, raw) row, in order; or (seq, ts, direction, raw, redacted)
        rows, `redacted` the frame's paths capture replaced (JSON text, or None), for the security rules."""
        collecting = gc.isenabled()
        gc.disable()  # rows and records, not cycles: the collector would only walk them again and again
        try:
            if rows and len(rows[0]) == 5:
                for seq, ts, direction, raw, self._recorded in rows:
                    self.frame(seq, ts, direction, raw)
                self._recorded = None
                return
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
            self._check_exact(msg, raw, value if parsed.plain else None)
            if self._reading is not None:
                self._secure(seq, ts, direction, raw, [msg.row], value if parsed.plain else UNREAD)
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
            rows = [msg.row for msg in frame.elements]
            for msg in frame.elements:
                self._observe(msg)
                self._check_exact(msg, None)
            if self._reading is not None:
                self._secure(seq, ts, direction, raw, rows, value if parsed.plain else UNREAD)
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
        changes and rows as the exact path, the value built only for a tools/call result (`read_answer`). False, before
        anything has changed, for anything else: the exact path then takes the frame."""
        key, method, ident, id_json, meta, params, result_type, ident_key, member = envelope
        value = None  # the frame as orjson reads it, where it was read
        shape = self._clean.get(key)
        if shape is None:
            shape = self._dispatch.clean_shape(key)
        if not shape:
            return False
        sig, kind = shape
        if kind is REQUEST:
            key = (direction, ident_key)
            if key in self.outstanding or key in self.answered or method == "initialize":
                return False
            if meta is None:
                meta = _NO_META
            elif self.handshake and direction == C2S and self.init_request is None and mcp.META_PROTOCOL_VERSION in meta:
                return False  # a dual-era client's probe
            quiet = self._quiet.get((method, direction, True))
            if quiet is None:
                quiet = self._quiet_method(method, direction, True)
            if not quiet or (self.stateless and direction == C2S and (
                    mcp.missing_meta(meta) or (mcp.META_LOG_LEVEL in meta and _LOGGING not in self.once))):
                return False
            row = [self.session_id, seq, None, direction, REQUEST, id_json, method, None, None]
            msg = WireMsg(seq, ts, direction, raw, sig, REQUEST, method, ident, id_json, row)
            self._await(msg, key, meta)
            if self._reading is not None and method in _SECURE:
                value = self._secure_fast(seq, ts, direction, raw, False)
            self._check(REQUEST, direction, method, raw, msg, seq, None, value, member)
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
            if self._reading is not None and method in _SECURE:
                value = self._secure_fast(seq, ts, direction, raw, False)
            self._check(NOTIFICATION, direction, method, raw, None, seq, None, value, member)
            self._rows.append([self.session_id, seq, None, direction, NOTIFICATION, None, method, None, None])
            self.last_sent[direction] = (seq, ts, direction, raw, sig, NOTIFICATION, method, ident, id_json)
        elif kind is RESPONSE or kind is ERROR:
            key = (OTHER[direction], ident_key)
            req = self.outstanding.get(key)
            if (req is None or req is self.init_request or req.batch is not None
                    or (self._scope is not None and self._scope.requests.get(key) is not req)
                    or (req.cancelled is not None and req.cancelled < seq)
                    or (self.stateless and kind is RESPONSE and (result_type == "input_required" or mcp.bad_result_type(result_type)
                                                                 or req.method == DISCOVER))
                    or (req.method == TOOL_CALL and (kind is ERROR or (value := read_answer(raw)) is False))):
                return False  # (read_answer: a number past what orjson reads, the exact path's)
            row = [self.session_id, seq, None, direction, kind, id_json, None, None, None]
            self._rows.append(row)
            del self.outstanding[key]
            self._answer(row, kind, seq, ts, key, req, value)
            if self._reading is not None and req.method in _SECURE:
                value = self._secure_fast(seq, ts, direction, raw, req.method == TOOL_CALL, value)
            self._check(kind, direction, req.method, raw, req, seq, None, value, member)
            self.last_sent[direction] = (seq, ts, direction, raw, sig, kind, None, ident, id_json)
        else:
            return False
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return True

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
        if self._reading is not None:
            self._findings.extend(self._secured())


ENVELOPE_ITEMS = 9
"""The items of the scanner's envelope tuple that `_fast` reads (a build of before the member's
bytes, 8, gives None for them: its messages' schema verdicts are not cached)."""
_BUILT = getattr(_wirescan, "ENVELOPE_ITEMS", None)
if _wirescan is not None and (_BUILT not in (ENVELOPE_ITEMS, 8) or _wirescan.META_NAMES != (
        mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES, mcp.META_LOG_LEVEL)):
    _wirescan = None  # a build from other sources: the exact path alone is right, only slower
if _wirescan is not None:
    _wirescan.configure(_MISSING, frozenset({"notifications/progress", "notifications/cancelled"}), NumberText)
    _SCAN = _wirescan.scan
    if _BUILT == 8:
        def _SCAN(raw, _scan=_wirescan.scan):  # noqa: N802 - the scan, its envelope given a member of None
            envelope = _scan(raw)
            return envelope if envelope is None else (*envelope, None)
