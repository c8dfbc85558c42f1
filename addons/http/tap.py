"""The mitmproxy addon that records MCP over HTTP (Streamable HTTP, legacy HTTP+SSE, 2026-07-28
stateless) into an mcptap database, event by event as it passes, without holding anything back.

    mitmdump -s "$(mcptap addon-path)" --set mcptap_db=PATH     (any mode: explicit, reverse, ...;
                                                                  that file loads this module)
    mcptap proxy --upstream URL                                  (reverse mode, in process)

What is recorded: every JSON-RPC frame in a POST body, a JSON answer and each SSE event with data,
with its exchange (table `exchanges`: method, URL, status, the MCP headers, timings; credentials
redacted unless `mcptap_keep_credentials`). SSE answers are tapped (`flow.response.stream`): each
chunk is forwarded as it came the moment it came, and queued with its time; the recorder process
(addons/http/recorder.py) decompresses and cuts the events, each stamped with the time of the chunk
that completed it, and writes SQLite. On mitmproxy's event loop nothing but queueing and the
session bookkeeping happens: an exchange is queued as its raw header fields, and the recorder
process decodes, redacts and serialises them (`exchange_row`).

Sessions (docs/mitmproxy-notes.md):
- Streamable HTTP: one per `Mcp-Session-Id` and upstream; the initialize POST that comes before
  the id joins the session its answer assigns. A DELETE answered 2xx ends it.
- Legacy HTTP+SSE: one per stream, keyed by the endpoint its `endpoint` event announced (the
  `session_id`/`sessionId` query parameter); POSTs to that endpoint join it; the stream's end ends it.
- No session id at all (2026-07-28 stateless, or a server without session management): one
  session per upstream, client address and User-Agent for the life of the proxy.
- A request without its session id, or with one the server never assigned, on a client
  connection that carried a session, stays in that session (where the analysis reports it).
Every session still open when the proxy stops is ended then, after its streams' last events.

Which flows count as MCP: a request or answer carrying `Mcp-Session-Id` or `MCP-Protocol-Version`,
a POST whose body names "jsonrpc", a GET asking for `text/event-stream`, a DELETE with a session
id. Anything else passing the proxy (a browser's traffic in
explicit mode, OAuth metadata) is not recorded. Under `mcptap proxy`, a request its guard refused
(addons/http/origin_guard.py: a foreign Host or Origin) is recorded as an exchange without frames."""

from __future__ import annotations

import logging
import os
import socket
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl

from mitmproxy import ctx, exceptions, http

from mcptap.wire.bounded import DEFAULT_MAX_FRAME, Kept, cut_row, decode_body
from mcptap.addons.http.recorder import RemoteJournal, Streams, exchange_row, url_text
from mcptap.addons.http.origin_guard import CLIENT_HEADERS, REFUSED
from mcptap.wire.sse import LINE_SLACK
from mcptap import __version__, store
from mcptap.ids import new_session_id
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.wire.urls import split_url

C2S, S2C = "c2s", "s2c"
log = logging.getLogger(__name__)
LEGACY_KEYS = ("session_id", "sessionId")
MODERN_ERA = b"2026"  # MCP-Protocol-Version values from here on are stateless: no session ids
STREAM_AT = 1 << 20
"""`mcptap proxy` streams a body of a known length above this (see McpTap): mitmproxy holds no
larger body whole, only the frame its first max_frame bytes make."""
SCOUT_BYTES = 1 << 20
"""Bytes of a stream whose session is not known yet that are held and read on the event loop;
a stream that has not told its session by then joins the sessionless group of its client."""


@dataclass
class Session:
    id: str
    key: tuple
    transport: str
    open: bool = True


class Exchange:
    """An MCP exchange passing the proxy: what the session bookkeeping needs, and what was seen
    of it, raw (header fields as mitmproxy holds them), until it is queued as a snapshot."""

    __slots__ = ("flow_id", "method", "url", "path", "upstream", "started_at", "request_end", "request_fields", "connection",
                 "client", "user_agent", "session", "pending", "status", "response_fields", "response_at",
                 "response_type", "content_encoding", "endpoint", "outcome", "ended_at", "streaming", "shipped",
                 "early", "early_bytes", "scout", "legacy_stream", "finished", "kept")

    def __init__(self, flow_id: str, method: str, url: str | tuple, path: str, upstream: str, started_at: float,
                 request_end: float | None, request_fields: tuple, connection: str, client: str,
                 user_agent: bytes | None) -> None:
        self.flow_id, self.method, self.upstream = flow_id, method, upstream
        self.url, self.path = url, path  # the URL as its parts (addons/http/recorder.py url_text), and the path
        self.started_at, self.request_end, self.request_fields = started_at, request_end, request_fields
        self.connection, self.client, self.user_agent = connection, client, user_agent  # the client connection it came on
        self.session: Session | None = None
        self.pending: list = []  # frames waiting for their session: (ts, direction, raw, event id, incomplete, size)
        self.status = self.response_fields = self.response_at = None
        self.response_type: str | None = None
        self.content_encoding: str | None = None
        self.endpoint: str | None = None  # what a legacy stream's `endpoint` event announced
        self.outcome: str | None = None
        self.ended_at: float | None = None
        self.streaming = False  # an SSE answer, tapped
        self.shipped = False  # its stream (and chunks) go to the journal, cut there
        self.early: list | None = None  # chunks of a stream whose session is not known yet: (ts, bytes)
        self.early_bytes = 0  # their length (at most SCOUT_BYTES and a chunk)
        self.scout: Streams | None = None  # reads those chunks here, for the legacy endpoint or a first message
        self.legacy_stream = False  # a GET stream that may announce a legacy endpoint
        self.finished = False
        self.kept: Kept | None = None  # an answer larger than the limit, streamed: what is stored of it

    @property
    def stateless_key(self) -> tuple:
        """Its session when no session id ever tells."""
        return ("stateless", self.upstream, self.client, _text(self.user_agent) or "")

    def snapshot(self) -> dict:
        """The exchange as seen so far, raw (addons/http/recorder.py `exchange_row` makes its row)."""
        return {"id": self.flow_id, "session_id": self.session.id if self.session is not None else None,
                "method": self.method, "url": self.url, "status": self.status,
                "request_fields": self.request_fields, "response_fields": self.response_fields,
                "endpoint": self.endpoint, "started_at": self.started_at, "request_end": self.request_end,
                "response_at": self.response_at, "ended_at": self.ended_at, "outcome": self.outcome}


def _lookup(fields: tuple) -> dict[bytes, bytes]:
    """Raw header fields by lower-cased name, the first of repeated names (one pass, where each
    `headers.get` of mitmproxy scans them all and decodes)."""
    return {name.lower(): value for name, value in reversed(fields)}


def _text(value: bytes | None) -> str | None:
    """A header value as mitmproxy gives it (UTF-8, undecodable bytes escaped)."""
    return None if value is None else value.decode("utf-8", "surrogateescape")


def _length(h: dict[bytes, bytes]) -> int:
    """The Content-Length of a message's header fields (0: none, or none that reads)."""
    value = h.get(b"content-length", b"")
    return int(value) if value.isdigit() and len(value) < 20 else 0


def _is_json(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower().endswith(("/json", "+json"))


def _is_sse(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower() == "text/event-stream"


def _legacy_token(target: str) -> str | None:
    """The legacy session key in a URL's (or a request target's) query."""
    for key, value in parse_qsl(split_url(target).query, keep_blank_values=True):
        if key in LEGACY_KEYS and value:
            return value
    return None


class McpTap:
    def __init__(self, *, recorder: str = f"mcptap {__version__} mitmproxy addon", journal=None,
                 redactor: Redactor | None = None, label: str | None = None, source: str | None = None,
                 on_running: Callable[[], None] | None = None, max_frame: int = DEFAULT_MAX_FRAME,
                 guard=None, stream_at: int | None = None) -> None:
        """Inside mitmproxy the options give the database; `journal` and `redactor` given here
        serve an offline run over saved flows (analyzer/readers/http_capture.py). `on_running` is called
        once mitmproxy runs (its servers listen): a caller's hook that costs no addon of its own
        (mitmproxy offers every event to every addon, flow by flow); so is `guard`
        (addons/http/origin_guard.py OriginGuard), whose `requestheaders` runs first. A body of a known
        length above `stream_at` bytes (default: max_frame) passes mitmproxy streamed, its first
        max_frame bytes kept as they pass: mitmproxy would hold all of it, and a copy on its way
        out (`mcptap proxy` streams from STREAM_AT; a mitmdump user's other addons and saved flows
        see a body as mitmproxy holds it, so the addon alone streams only what it would cut)."""
        self.recorder = recorder
        self.journal = journal
        self.redactor = redactor or Redactor(keep=True)
        self.label = label
        self.source = source
        self.clock = time.time  # an import sets the time of the flow being read
        self.new_id = lambda key: new_session_id()  # an import gives ids that a second import finds again
        self.exchanges: dict[str, Exchange] = {}
        self.sessions: dict[tuple, Session] = {}
        self.by_connection: dict[str, tuple] = {}  # client connection -> the session id'd on it last
        self.errors = 0  # faults inside a tap, each said once in the log
        self.on_running = on_running
        self.max_frame = max_frame  # a larger frame is stored cut (analyzer/wire/bounded.py)
        self.stream_at = stream_at
        self._guard = guard
        self._kept_requests: dict[str, Kept] = {}  # streamed request bodies, by flow, until `request`
        self._raw_rows = hasattr(journal, "exchange_raw")  # the journal redacts and serialises exchanges itself

    # -- options -------------------------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option("mcptap_db", str, "", "mcptap: the SQLite database to record into (required).")
        loader.add_option("mcptap_label", str, "", "mcptap: a label for the sessions recorded.")
        loader.add_option("mcptap_keep_credentials", bool, False,
                          "mcptap: store everything as it was: Authorization, cookies, API-key headers, token "
                          "query parameters and credential members of frames (default: redacted by a keyed hash).")
        loader.add_option("mcptap_redact_keys", typing.Sequence[str], [],
                          "mcptap: more frame member names to redact (globs, any case).")
        loader.add_option("mcptap_redact_paths", typing.Sequence[str], [],
                          "mcptap: JSON paths of frame members to redact ($.params.arguments.token).")
        loader.add_option("mcptap_max_frame", int, DEFAULT_MAX_FRAME,
                          "mcptap: the largest frame stored whole, in bytes (decoded); a larger one is stored "
                          "cut at this size and marked, with its full size (the wire passes untouched).")

    def configure(self, updated: set[str]) -> None:
        if "mcptap_keep_credentials" in updated or self.journal is None:
            self.redactor = Redactor(keep=ctx.options.mcptap_keep_credentials)
        if "mcptap_label" in updated:
            self.label = ctx.options.mcptap_label or None
        if "mcptap_max_frame" in updated:
            if ctx.options.mcptap_max_frame <= 0:
                raise exceptions.OptionsError("mcptap: mcptap_max_frame must be a positive number of bytes")
            if self.journal is not None and ctx.options.mcptap_max_frame != self.max_frame:
                raise exceptions.OptionsError("mcptap: mcptap_max_frame cannot change while recording")
            self.max_frame = ctx.options.mcptap_max_frame
        if "mcptap_db" in updated:
            path = ctx.options.mcptap_db
            if not path:
                return  # said at `running`: an error here would also fire when a bad path is rolled back
            if self.journal is not None and self.journal.db_path != path:
                raise exceptions.OptionsError("mcptap: mcptap_db cannot change while recording")
            if self.journal is None:
                redaction = Redaction(keep=ctx.options.mcptap_keep_credentials,
                                      keys=tuple(ctx.options.mcptap_redact_keys),
                                      paths=tuple(ctx.options.mcptap_redact_paths))
                try:
                    FrameRedactor(redaction)  # a path it cannot read is the user's error now, not the recorder's later
                except ValueError as exc:
                    raise exceptions.OptionsError(f"mcptap: mcptap_redact_paths: {exc}") from None
                try:
                    self.journal = RemoteJournal(path, redaction=redaction, max_frame=ctx.options.mcptap_max_frame)
                    self._raw_rows = True
                except Exception as exc:  # noqa: BLE001 - any failure to open is the user's one-line error
                    raise exceptions.OptionsError(f"mcptap: cannot open the database {path}: {exc}") from None

    def running(self) -> None:
        if self.journal is None:
            log.error("mcptap: recording nothing: set the database with --set mcptap_db=PATH")
        if self.on_running is not None:
            self.on_running()

    # -- flows ---------------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if self._guard is not None:
            self._guard.requestheaders(flow)
        if self.journal is None or REFUSED in flow.metadata:
            return
        h = _lookup(flow.request.headers.fields)
        if not h.get(b"content-encoding") and _length(h) > self._streams_from():
            kept = self._kept_requests[flow.id] = Kept(self.max_frame)
            flow.request.stream = kept.passing(flow.request.stream)

    def _streams_from(self) -> int:
        return self.max_frame if self.stream_at is None else min(self.stream_at, self.max_frame)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.journal is None:
            return
        req = flow.request
        fields = flow.metadata.get(CLIENT_HEADERS) or req.headers.fields  # as the client sent them
        h = _lookup(fields)
        refused = flow.metadata.get(REFUSED)  # answered by the proxy: never went upstream
        kept = self._kept_requests.pop(flow.id, None)
        if kept is not None:  # streamed past mitmproxy: what was kept of it
            body, size = kept.take(), kept.size
        else:
            body, size = self._body(req.raw_content, h.get(b"content-encoding"))
        method = req.method
        if not refused and not self._is_mcp_request(method, h, body):
            return
        scheme, host, port, path = req.scheme, req.host, req.port, req.path
        # mitmproxy's req.url, made in the recorder process (where mitmproxy's versions differ: made here)
        url = (scheme, host, port, path) if method != "CONNECT" and path != "*" else req.url
        peer = flow.client_conn.peername
        ex = self.exchanges[flow.id] = Exchange(flow.id, method, url, path, f"{scheme}://{host}:{port}",
                                                req.timestamp_start, req.timestamp_end, fields, flow.client_conn.id,
                                                peer[0] if peer else "", h.get(b"user-agent"))
        if refused:
            ex.outcome = refused
        elif body and method == "POST":
            ex.pending.append((ex.request_end or time.time(), C2S, body, None, 0, size))
        # a refused request joins its client's sessionless group: it tells nothing of any session
        key = ex.stateless_key if refused else self._key_at_request(ex, h, body)
        if key is not None:
            self._join(ex, key)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        ex = self.exchanges.get(flow.id)
        if ex is None:
            return
        resp = flow.response
        ex.response_fields = fields = resp.headers.fields
        h = _lookup(fields)
        ex.status = resp.status_code
        ex.response_at = resp.timestamp_start
        ex.response_type = _text(h.get(b"content-type"))
        ex.content_encoding = _text(h.get(b"content-encoding"))
        sse = _is_sse(ex.response_type)
        if ex.session is None:
            assigned = _text(h.get(b"mcp-session-id"))
            if assigned:
                self._join(ex, ("http", ex.upstream, assigned))
            elif not (ex.legacy_stream and sse):
                self._join(ex, ex.stateless_key)  # else the stream's first event tells
        if sse:
            self._tap(flow, ex)
            self._exchange(ex)  # a stream may last: its exchange is in the database meanwhile
        elif not ex.content_encoding and _length(h) > self._streams_from():
            # streamed (mitmproxy would hold all of it), its first max_frame bytes kept as they pass
            ex.kept = Kept(self.max_frame)
            flow.response.stream = ex.kept.passing(flow.response.stream)

    def response(self, flow: http.HTTPFlow) -> None:
        ex = self.exchanges.get(flow.id)
        if ex is None:
            return
        resp = flow.response
        end = resp.timestamp_end or time.time()
        if not ex.streaming and REFUSED not in flow.metadata:  # not a stream: the whole answer is here
            if ex.kept is not None:
                body, size = ex.kept.take(), ex.kept.size
                ex.kept = None  # its pieces went: one copy of the frame is held, not two
            else:
                body, size = self._body(resp.raw_content, ex.content_encoding)
            if body and (_is_json(ex.response_type) or b'"jsonrpc"' in body):
                self._frame(ex, end, S2C, body, None, size=size)
        self._finish(ex, end, "complete")
        if ex.method == "DELETE" and 200 <= resp.status_code < 300 and ex.session is not None:
            self._end_session(ex.session, end)

    def _body(self, raw: bytes | None, encoding: bytes | str | None) -> tuple[bytes, int]:
        """A whole body as its frame is stored: decoded a step at a time and cut at the limit
        (analyzer/wire/bounded.py), and its full size."""
        raw = raw or b""
        if not encoding:
            return (raw if len(raw) <= self.max_frame else raw[:self.max_frame]), len(raw)
        if isinstance(encoding, bytes):
            encoding = encoding.decode("latin-1")
        return decode_body(raw, encoding, self.max_frame)

    def error(self, flow: http.HTTPFlow) -> None:
        self._kept_requests.pop(flow.id, None)
        ex = self.exchanges.get(flow.id)
        if ex is None:
            return
        message = flow.error.msg if flow.error else "error"
        self._finish(ex, self.clock(), f"error: {message}")

    def done(self) -> None:
        now = self.clock()
        for ex in list(self.exchanges.values()):
            self._finish(ex, now, "open at shutdown")
        for session in self.sessions.values():
            if session.open:
                self._end_session(session, now)
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    # -- streams -------------------------------------------------------------------------------

    def _tap(self, flow: http.HTTPFlow, ex: Exchange) -> None:
        """Forward every chunk as it came, and queue it for the journal, which cuts the events
        (addons/http/recorder.py). Until its session is known (a GET stream that may announce a
        legacy endpoint), the chunks are also read here."""
        ex.streaming = True
        if ex.session is not None:
            self._ship_stream(ex)
        else:
            ex.scout, ex.early = Streams(max_frame=SCOUT_BYTES), []
            ex.scout.cut([("stream", ex.flow_id, "", ex.content_encoding)])
        downstream = flow.response.stream
        chunk_op = self.journal.chunk
        # an identity stream's line longer than the limit: its further bytes go as their count alone
        plain = (ex.content_encoding or "identity").strip().lower() == "identity"
        overlong = self.max_frame + LINE_SLACK
        line = [0]  # bytes since the stream's last CR or LF

        def tap(chunk: bytes) -> bytes:
            if chunk and not ex.finished:
                counted = False
                if plain:
                    was = line[0]
                    last = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
                    line[0] = was + len(chunk) if last < 0 else len(chunk) - last - 1
                    counted = last < 0 and was >= overlong and ex.shipped  # the recorder would only count them
                if counted:
                    chunk_op(ex.flow_id, self.clock(), len(chunk))
                elif ex.shipped:
                    chunk_op(ex.flow_id, self.clock(), chunk)
                else:
                    try:
                        self._scout(ex, chunk)
                    except Exception as exc:  # noqa: BLE001 - a tap must never raise (the chunk would be lost)
                        self._fault(ex, exc)
            if callable(downstream):
                return downstream(chunk)
            return chunk

        flow.response.stream = tap

    def _ship_stream(self, ex: Exchange) -> None:
        self.journal.stream(ex.flow_id, ex.session.id, ex.content_encoding)
        for ts, chunk in ex.early or ():
            self.journal.chunk(ex.flow_id, ts, chunk)
        ex.early = ex.scout = None
        ex.early_bytes = 0
        ex.shipped = True

    def _scout(self, ex: Exchange, chunk: bytes) -> None:
        """A stream whose session is not known: its first event tells (an `endpoint` event:
        a legacy session; a message: the sessionless group of its client)."""
        ex.early.append((self.clock(), chunk))
        ex.early_bytes += len(chunk)
        for op in ex.scout.cut([("chunk", ex.flow_id, 0.0, chunk)]):
            if op[0] == "frame":
                self._join(ex, ex.stateless_key)
                return
        endpoint = ex.scout.endpoint(ex.flow_id)
        if endpoint is not None:
            ex.endpoint = endpoint
            self._join(ex, ("sse", ex.upstream, _legacy_token(endpoint) or endpoint), transport="sse")
        elif ex.early_bytes >= SCOUT_BYTES:  # no endpoint first: not a legacy stream; held no longer
            self._join(ex, ex.stateless_key)

    def _fault(self, ex: Exchange, exc: Exception) -> None:
        self.errors += 1
        ex.outcome = f"tap fault: {type(exc).__name__}: {exc}"
        ex.scout = None
        log.error(f"mcptap: cannot read the start of the stream of {url_text(ex.url)}: {type(exc).__name__}: {exc} "
                  "(the stream itself is forwarded unchanged)")
        self._join(ex, ex.stateless_key)

    def _finish(self, ex: Exchange, ended_at: float, outcome: str) -> None:
        if ex.finished:
            return
        ex.finished = True
        self.exchanges.pop(ex.flow_id, None)
        if ex.session is None:  # never told: it joins the sessionless group of its client
            self._join(ex, ex.stateless_key)
        if ex.streaming:
            self.journal.close_stream(ex.flow_id, ended_at)
        ex.ended_at = ended_at
        ex.outcome = ex.outcome or outcome
        self._exchange(ex)
        if ex.legacy_stream and ex.session is not None and ex.session.transport == "sse":
            self._end_session(ex.session, ended_at)

    # -- sessions ------------------------------------------------------------------------------

    @staticmethod
    def _is_mcp_request(method: str, h: dict[bytes, bytes], body: bytes) -> bool:
        if b"mcp-session-id" in h or b"mcp-protocol-version" in h:
            return True
        if method == "POST":
            return b'"jsonrpc"' in body
        if method == "GET":
            return b"text/event-stream" in h.get(b"accept", b"")
        return False

    def _key_at_request(self, ex: Exchange, h: dict[bytes, bytes], body: bytes) -> tuple | None:
        """The session, where the request alone tells it; None: its answer will.

        A request without the session id, or with one the server never assigned, sent on a
        client connection that carried a session's requests, belongs to that session (that is
        how the analysis can tell a missing or wrong Mcp-Session-Id); a 2026-07-28 request
        never does (it has no session)."""
        sid = _text(h.get(b"mcp-session-id"))
        held = self.by_connection.get(ex.connection)
        if held is not None and not self.sessions[held].open:
            held = None
        if sid:
            key = ("http", ex.upstream, sid)
            if key in self.sessions or held is None:
                return key
            return held
        post = ex.method == "POST"
        token = _legacy_token(ex.path) if post and "?" in ex.path else None
        if token is not None:
            return ("sse", ex.upstream, token)
        initialize = post and b'"initialize"' in body
        modern = h.get(b"mcp-protocol-version", b"") >= MODERN_ERA  # UTF-8 sorts as its code points do
        if held is not None and not initialize and not modern:
            return held
        if ex.method == "GET":
            ex.legacy_stream = True  # a stream that may announce a legacy endpoint
            return None
        if initialize:
            return None  # the answer may assign a session id
        return ex.stateless_key

    def _join(self, ex: Exchange, key: tuple, transport: str | None = None) -> None:
        session = self.sessions.get(key)
        if session is None or not session.open:
            session = self._new_session(key, transport or ("sse" if key[0] == "sse" else "http"), ex)
        ex.session = session
        if key[0] == "http" and ex.connection:
            self.by_connection[ex.connection] = key
        for ts, direction, raw, event_id, incomplete, size in ex.pending:
            self.journal.frame(self._row(session.id, ts, direction, raw, ex.flow_id, event_id, incomplete, size))
        ex.pending.clear()
        if ex.streaming and not ex.shipped:
            self._ship_stream(ex)

    def _new_session(self, key: tuple, transport: str, ex: Exchange) -> Session:
        session = self.sessions[key] = Session(self.new_id(key), key, transport)
        upstream, _ = self.redactor.url(ex.upstream)
        text = store.text_cell  # a host, a file name: any bytes (analyzer/store/__init__.py)
        self.journal.session({
            "id": session.id, "transport": transport, "label": text(self.label), "started_at": ex.started_at,
            "upstream": text(upstream), "recorder": self.recorder, "host": text(socket.gethostname()),
            "pid": os.getpid(), **({"source": text(self.source)} if self.source else {}),
        })
        return session

    def _end_session(self, session: Session, ended_at: float) -> None:
        if session.open:
            session.open = False
            self.journal.end(session.id, ended_at)

    def _exchange(self, ex: Exchange) -> None:
        """Queue the exchange as seen so far: raw to a journal that makes its row elsewhere (the
        recorder process), else its row (an import)."""
        if self._raw_rows:
            self.journal.exchange_raw(ex.snapshot())
        else:
            self.journal.exchange(exchange_row(ex.snapshot(), self.redactor))

    def _frame(self, ex: Exchange, ts: float, direction: str, raw: bytes, event_id: str | None,
               incomplete: int = 0, size: int | None = None) -> None:
        if ex.session is None:
            ex.pending.append((ts, direction, raw, event_id, incomplete, size))
            return
        self.journal.frame(self._row(ex.session.id, ts, direction, raw, ex.flow_id, event_id, incomplete, size))

    @staticmethod
    def _row(session_id: str, ts: float, direction: str, raw: bytes, exchange_id: str, event_id: str | None,
             incomplete: int, size: int | None) -> tuple:
        """A frame's row; one stored cut at the limit is marked, with its full size `size`."""
        row = store.http_frame_row(session_id, 0, ts, direction, raw, exchange_id, event_id, incomplete)
        return row if size is None or size <= len(raw) else cut_row(row, size)
