"""The mitmproxy addon that records MCP over HTTP (Streamable HTTP, legacy HTTP+SSE, 2026-07-28
stateless) into an mcptap database, event by event as it passes, without holding anything back.

    mitmdump -s "$(mcptap addon-path)" --set mcptap_db=PATH     (any mode: explicit, reverse, ...;
                                                                  that file loads this module)
    mcptap proxy --upstream URL                                  (reverse mode, in process)

What is recorded: every JSON-RPC frame in a POST body, a JSON answer and each SSE event with data,
with its exchange (table `exchanges`: method, URL, status, the MCP headers, timings; credentials
redacted unless `mcptap_keep_credentials`). SSE answers are tapped (`flow.response.stream`): each
chunk is forwarded as it came the moment it came, and queued with its time; the recorder process
(addons/http/recorder.py, with addons/http/streams.py) decompresses and cuts the events, each
stamped with the time of the chunk that completed it, and writes SQLite. On mitmproxy's event loop nothing but queueing and the
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
id. The exchanges of an OAuth flow (addons/http/auth.py: discovery, at the well-known paths or
wherever a challenge's `resource_metadata` pointed, registration, authorization, token) are recorded as exchanges with their role and bodies, never as
frames, in the session their client is in or makes next; so is the body of an HTTP error that is
no JSON-RPC message, beside its exchange. Anything else passing the proxy (a browser's traffic in
explicit mode) is not recorded. Under `mcptap proxy`, a request its guard refused
(addons/http/origin_guard.py: a foreign Host or Origin) is recorded as an exchange without frames.

This module is mitmproxy's hooks; the bookkeeping they drive (sessions, exchanges, what is queued)
is addons/http/book.py, which does not import mitmproxy."""


from __future__ import annotations

import time
import typing
from collections.abc import Callable

from mitmproxy import ctx, exceptions, http

from mcptap import __version__
from mcptap.addons.http import auth
from mcptap.addons.http.book import (C2S, S2C, SCOUT_BYTES, Exchange, ExchangeBook, is_json, is_sse,
                                     content_length, header_fields, header_text, log)
from mcptap.addons.http.origin_guard import CLIENT_HEADERS, REFUSED
from mcptap.addons.http.recorder import RemoteJournal
from mcptap.addons.http.streams import Streams
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.store.ops import StreamOp
from mcptap.wire.bounded import DEFAULT_MAX_FRAME, Kept, decode_body
from mcptap.wire.sse import LINE_SLACK

STREAM_AT = 1 << 20
"""`mcptap proxy` streams a body of a known length above this (see McpTap): mitmproxy holds no
larger body whole, only the frame its first max_frame bytes make."""


class McpTap(ExchangeBook):
    """mitmproxy's hooks: options, then each flow's events, handed to the book (addons/http/book.py)."""

    def __init__(self, *, recorder: str = f"mcptap {__version__} mitmproxy addon", journal=None,
                 redactor: Redactor | None = None, label: str | None = None, source: str | None = None,
                 on_running: Callable[[], None] | None = None, max_frame: int = DEFAULT_MAX_FRAME,
                 guard=None, stream_at: int | None = None, rewriter=None,
                 recorder_process: tuple[tuple[str, ...], dict] | None = None) -> None:
        """Inside mitmproxy the options give the database; `journal` and `redactor` given here
        serve an offline run over saved flows (analyzer/readers/http_capture.py). `on_running` is called
        once mitmproxy runs (its servers listen): a caller's hook that costs no addon of its own
        (mitmproxy offers every event to every addon, flow by flow); so is `guard`
        (addons/http/origin_guard.py OriginGuard), whose `requestheaders` runs first. A body of a known
        length above `stream_at` bytes (default: max_frame) passes mitmproxy streamed, its first
        max_frame bytes kept as they pass: mitmproxy would hold all of it, and a copy on its way
        out (`mcptap proxy` streams from STREAM_AT; a mitmdump user's other addons and saved flows
        see a body as mitmproxy holds it, so the addon alone streams only what it would cut).
        `recorder_process`: (words after `python -m`, environment added) of the recorder process in
        place of addons/http/recorder.py (`mcptap proxy --otlp-endpoint`: one that also sends telemetry)."""
        self._recorder_process = recorder_process
        super().__init__(recorder=recorder, journal=journal, redactor=redactor or Redactor(keep=True), label=label,
                         source=source)
        self.on_running = on_running
        self.max_frame = max_frame  # a larger frame is stored cut (analyzer/wire/bounded.py)
        self.stream_at = stream_at
        self._guard = guard
        self.rewriter = rewriter  # `mcptap proxy`: what must name the proxy (addons/http/auth.py Rewriter)
        self._kept_requests: dict[str, Kept] = {}  # streamed request bodies, by flow, until `request`

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
                    self.journal = RemoteJournal(path, redaction=redaction, max_frame=ctx.options.mcptap_max_frame,
                                                 process=self._recorder_process)
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
        h = header_fields(flow.request.headers.fields)
        if not h.get(b"content-encoding") and content_length(h) > self._streams_from():
            kept = self._kept_requests[flow.id] = Kept(self.max_frame)
            flow.request.stream = kept.passing(flow.request.stream)

    def _streams_from(self) -> int:
        return self.max_frame if self.stream_at is None else min(self.stream_at, self.max_frame)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.journal is None:
            return
        req = flow.request
        fields = flow.metadata.get(CLIENT_HEADERS) or req.headers.fields  # as the client sent them
        h = header_fields(fields)
        refused = flow.metadata.get(REFUSED)  # answered by the proxy: never went upstream
        kept = self._kept_requests.pop(flow.id, None)
        if kept is not None:  # streamed past mitmproxy: what was kept of it
            body, size = kept.take(), kept.size
        else:
            body, size = self._body(req.raw_content, h.get(b"content-encoding"))
        method = req.method
        # the authorization flow's requests may carry MCP-Protocol-Version too (both SDKs send it on discovery)
        scheme, host, port, path = req.scheme, req.host, req.port, req.path
        named = method == "GET" and self._named_metadata(scheme, host, port, path)  # where a challenge said
        role = None if refused or b'"jsonrpc"' in body else "auth-discovery" if named else auth.role(
            method, path, header_text(h.get(b"content-type")), body)
        if role is None and not refused and not self._is_mcp_request(method, h, body):
            return
        # mitmproxy's req.url, made in the recorder process (where mitmproxy's versions differ: made here)
        url = (scheme, host, port, path) if method != "CONNECT" and path != "*" else req.url
        peer = flow.client_conn.peername
        ex = self.exchanges[flow.id] = Exchange(flow.id, method, url, path, f"{scheme}://{host}:{port}",
                                                req.timestamp_start, req.timestamp_end, fields, flow.client_conn.id,
                                                peer[0] if peer else "", h.get(b"user-agent"))
        if role is not None:  # the authorization flow's, not MCP's: stored with its exchange, never a frame
            ex.role, ex.request_body = role, body or None
            ex.metadata = named or (role == "auth-discovery" and auth.PRM_PATH in path)
            return
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
        h = header_fields(fields)
        ex.status = resp.status_code
        ex.response_at = resp.timestamp_start
        ex.response_type = header_text(h.get(b"content-type"))
        ex.content_encoding = header_text(h.get(b"content-encoding"))
        sse = is_sse(ex.response_type)
        if ex.status in (401, 403):
            challenges = [value for name, value in fields if name.lower() == b"www-authenticate"]
            if challenges:
                self._note_challenge(challenges)
                if self.rewriter is not None:
                    self._rewrite_challenge(flow, ex)
        if ex.role is not None:
            return  # not MCP: its answer is read whole in `response`
        if ex.status in (401, 403) and not sse:
            ex.refused = True  # its session is the one its client is in, or makes with the retry
        if ex.session is None and not ex.refused:
            assigned = header_text(h.get(b"mcp-session-id"))
            if assigned:
                self._join(ex, ("http", ex.upstream, assigned))
            elif not (ex.legacy_stream and sse):
                self._join(ex, ex.stateless_key)  # else the stream's first event tells
        if sse:
            self._tap(flow, ex)
            self._exchange(ex)  # a stream may last: its exchange is in the database meanwhile
        elif not ex.content_encoding and content_length(h) > self._streams_from():
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
            if ex.role is not None:
                ex.response_body = body or None
                if self.rewriter is not None and ex.metadata:
                    self._rewrite_metadata(flow, ex)
            elif body and resp.status_code >= 400 and b'"jsonrpc"' not in body:
                ex.response_body = body  # the HTTP error's own explanation: no JSON-RPC message
                ex.role = auth.refusal_role(resp.status_code, header_fields(resp.headers.fields).get(b"www-authenticate"))
            elif body and (is_json(ex.response_type) or b'"jsonrpc"' in body):
                self._frame(ex, end, S2C, body, None, size=size)
        self._finish(ex, end, "complete")
        if ex.method == "DELETE" and 200 <= resp.status_code < 300 and ex.session is not None:
            self._end_session(ex.session, end)

    # -- the authorization flow through `mcptap proxy` ----------------------------------------------

    def _public(self, flow: http.HTTPFlow) -> str | None:
        fields = flow.metadata.get(CLIENT_HEADERS) or flow.request.headers.fields
        return self.rewriter.public_origin(header_text(header_fields(fields).get(b"host")))

    def _rewrite_challenge(self, flow: http.HTTPFlow, ex: Exchange) -> None:
        """`resource_metadata` in a 401/403 challenge names the proxy: what the client must fetch
        through it. The stored headers stay the upstream's; the change is kept beside them."""
        public = self._public(flow)
        if public is None:
            return
        headers = flow.response.headers
        values = headers.get_all("www-authenticate")
        new = [self.rewriter.challenge(v, public) for v in values]
        if any(n is not None for n in new):
            headers.set_all("www-authenticate", [n if n is not None else v for v, n in zip(values, new)])
            ex.rewritten = (ex.rewritten or []) + [["header", "WWW-Authenticate", v, n]
                                                   for v, n in zip(values, new) if n is not None]

    def _rewrite_metadata(self, flow: http.HTTPFlow, ex: Exchange) -> None:
        """The protected-resource metadata's `resource` names the proxy (RFC 9728 §3.3: the URL the
        client used). The stored body stays the upstream's; the client's version is kept beside it."""
        public = self._public(flow)
        if public is None or flow.response.raw_content is None:
            return
        try:
            body = flow.response.content  # decoded, whatever its Content-Encoding
        except ValueError:
            return
        new = self.rewriter.metadata(body, public)
        if new is not None:
            flow.response.content = new  # encoded as it came, and its Content-Length
            ex.rewritten = (ex.rewritten or []) + [["body", "resource", body.decode("utf-8", "replace"),
                                                    new.decode("utf-8", "replace")]]

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
        self.release_held()
        for session in self.sessions.values():
            if session.open:
                self._end_session(session, now)
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    # -- streams -------------------------------------------------------------------------------

    def _tap(self, flow: http.HTTPFlow, ex: Exchange) -> None:
        """Forward every chunk as it came, and queue it for the journal, which cuts the events
        (addons/http/streams.py, in the recorder process). Until its session is known (a GET
        stream that may announce a legacy endpoint), the chunks are also read here."""
        ex.streaming = True
        if ex.session is not None:
            self._ship_stream(ex)
        else:
            ex.scout, ex.early = Streams(max_frame=SCOUT_BYTES), []
            ex.scout.cut([StreamOp(ex.flow_id, "", ex.content_encoding)])
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
