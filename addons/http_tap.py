"""The mitmproxy addon that records MCP over HTTP (Streamable HTTP, legacy HTTP+SSE, 2026-07-28
stateless) into an mcptap database, event by event as it passes, without holding anything back.

    mitmdump -s addons/http_recorder.py --set mcptap_db=PATH     (any mode: explicit, reverse, ...;
                                                                  that file loads this module)
    mcptap proxy --upstream URL                                  (reverse mode, in process)

What is recorded: every JSON-RPC frame in a POST body, a JSON answer and each SSE event with data,
with its exchange (table `exchanges`: method, URL, status, the MCP headers, timings; credentials
redacted unless `mcptap_keep_credentials`). SSE answers are tapped (`flow.response.stream`): each
chunk is forwarded as it came the moment it came, and queued with its time; the recorder process
(addons/http_writer.py) decompresses and cuts the events, each stamped with the time of the chunk
that completed it, and writes SQLite. On mitmproxy's event loop nothing but queueing happens.

Sessions (spec/mitmproxy-notes.md):
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
explicit mode, OAuth metadata) is not recorded."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import typing
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from mitmproxy import ctx, exceptions, http

from addons.http_writer import RemoteJournal, Streams
from analyzer import __version__, store
from analyzer.ids import new_session_id
from analyzer.redact import FrameRedactor, Redaction, Redactor

C2S, S2C = "c2s", "s2c"
log = logging.getLogger(__name__)
LEGACY_KEYS = ("session_id", "sessionId")
MODERN_ERA = "2026"  # MCP-Protocol-Version values from here on are stateless: no session ids


@dataclass
class Session:
    id: str
    key: tuple
    transport: str
    open: bool = True


@dataclass
class Exchange:
    flow_id: str
    method: str
    url: str
    upstream: str
    started_at: float
    session: Session | None = None
    pending: list = field(default_factory=list)  # frames waiting for their session: (ts, direction, raw, event id, incomplete)
    row: dict = field(default_factory=dict)
    streaming: bool = False  # an SSE answer, tapped
    shipped: bool = False  # its stream (and chunks) go to the journal, cut there
    early: list = field(default_factory=list)  # chunks of a stream whose session is not known yet: (ts, bytes)
    scout: Streams | None = None  # reads those chunks here, for the legacy endpoint or a first message
    legacy_stream: bool = False  # a GET stream that may announce a legacy endpoint
    stateless_key: tuple = ()  # its session when no session id ever tells
    connection: str = ""  # the client connection it came on
    finished: bool = False


def _upstream(request: http.Request) -> str:
    return f"{request.scheme}://{request.host}:{request.port}"


def _fields(message: http.Message) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The headers as (name, value) pairs, and a lower-cased lookup (the first of repeated
    names): one pass, where each `headers.get` of mitmproxy scans them all."""
    fields = list(message.headers.items(multi=True))
    lookup: dict[str, str] = {}
    for name, value in fields:
        lookup.setdefault(name.lower(), value)
    return fields, lookup


def _is_json(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower().endswith(("/json", "+json"))


def _is_sse(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower() == "text/event-stream"


def _legacy_token(url: str) -> str | None:
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key in LEGACY_KEYS and value:
            return value
    return None


class McpTap:
    def __init__(self, *, recorder: str = f"mcptap {__version__} mitmproxy addon", journal=None,
                 redactor: Redactor | None = None, label: str | None = None, source: str | None = None) -> None:
        """Inside mitmproxy the options give the database; `journal` and `redactor` given here
        serve an offline run over saved flows (addons/capture_import.py)."""
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

    def configure(self, updated: set[str]) -> None:
        if "mcptap_keep_credentials" in updated or self.journal is None:
            self.redactor = Redactor(keep=ctx.options.mcptap_keep_credentials)
        if "mcptap_label" in updated:
            self.label = ctx.options.mcptap_label or None
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
                    self.journal = RemoteJournal(path, redaction=redaction)
                except Exception as exc:  # noqa: BLE001: any failure to open is the user's one-line error
                    raise exceptions.OptionsError(f"mcptap: cannot open the database {path}: {exc}") from None

    def running(self) -> None:
        if self.journal is None:
            log.error("mcptap: recording nothing: set the database with --set mcptap_db=PATH")

    # -- flows ---------------------------------------------------------------------------------

    def request(self, flow: http.HTTPFlow) -> None:
        if self.journal is None:
            return
        req = flow.request
        fields, h = _fields(req)
        body = (req.get_content(strict=False) if "content-encoding" in h else req.raw_content) or b""
        if not self._is_mcp_request(req.method, h, body):
            return
        url, redacted = self.redactor.url(req.url)
        headers, redacted_headers = self.redactor.headers(fields)
        ex = self.exchanges[flow.id] = Exchange(flow.id, req.method, url, _upstream(req), req.timestamp_start)
        ex.row = {
            "id": flow.id, "session_id": None, "method": req.method, "url": url, "status": None,
            "request_type": h.get("content-type"), "response_type": None,
            "mcp_session_id": h.get("mcp-session-id"), "assigned_session": None,
            "protocol_version": h.get("mcp-protocol-version"), "accept": h.get("accept"),
            "last_event_id": h.get("last-event-id"), "content_encoding": None, "endpoint": None,
            "events": 0, "request_headers": json.dumps(headers, ensure_ascii=False), "response_headers": None,
            "redacted": json.dumps(redacted_headers + redacted) if redacted_headers or redacted else None,
            "started_at": req.timestamp_start, "request_end": req.timestamp_end, "response_at": None,
            "ended_at": None, "outcome": None,
        }
        ex.connection = flow.client_conn.id
        client = flow.client_conn.peername[0] if flow.client_conn.peername else ""
        ex.stateless_key = ("stateless", ex.upstream, client, h.get("user-agent", ""))
        if body and req.method == "POST":
            ex.pending.append((req.timestamp_end or time.time(), C2S, body, None, 0))
        key = self._key_at_request(ex, req, h, body)
        if key is not None:
            self._join(ex, key)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        ex = self.exchanges.get(flow.id)
        if ex is None:
            return
        resp = flow.response
        fields, h = _fields(resp)
        assigned = h.get("mcp-session-id")
        status = resp.status_code if isinstance(resp.status_code, int) and 0 <= resp.status_code <= 999 else None
        ex.row.update(status=status, response_type=h.get("content-type"),
                      assigned_session=assigned, content_encoding=h.get("content-encoding"),
                      response_at=resp.timestamp_start)
        headers, redacted = self.redactor.headers(fields)
        ex.row["response_headers"] = json.dumps(headers, ensure_ascii=False)
        if redacted:
            ex.row["redacted"] = json.dumps(json.loads(ex.row["redacted"] or "[]") + redacted)
        if ex.session is None:
            if assigned:
                self._join(ex, ("http", ex.upstream, assigned))
            elif not (ex.legacy_stream and _is_sse(ex.row["response_type"])):
                self._join(ex, ex.stateless_key)  # else the stream's first event tells
        if _is_sse(ex.row["response_type"]):
            self._tap(flow, ex)
            self.journal.exchange(dict(ex.row))  # a stream may last: its exchange is in the database meanwhile

    def response(self, flow: http.HTTPFlow) -> None:
        ex = self.exchanges.get(flow.id)
        if ex is None:
            return
        resp = flow.response
        if not ex.streaming:  # not a stream: the whole answer is here
            body = (resp.get_content(strict=False) if ex.row["content_encoding"] else resp.raw_content) or b""
            if body and (_is_json(ex.row["response_type"]) or b'"jsonrpc"' in body):
                self._frame(ex, resp.timestamp_end or time.time(), S2C, body, None)
        self._finish(ex, resp.timestamp_end or time.time(), "complete")
        if ex.method == "DELETE" and 200 <= resp.status_code < 300 and ex.session is not None:
            self._end_session(ex.session, resp.timestamp_end or time.time())

    def error(self, flow: http.HTTPFlow) -> None:
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
        (addons/http_writer.py). Until its session is known (a GET stream that may announce a
        legacy endpoint), the chunks are also read here."""
        ex.streaming = True
        if ex.session is not None:
            self._ship_stream(ex)
        else:
            ex.scout = Streams()
            ex.scout.cut([("stream", ex.flow_id, "", ex.row["content_encoding"])])
        downstream = flow.response.stream
        chunk_op = self.journal.chunk

        def tap(chunk: bytes) -> bytes:
            if chunk and not ex.finished:
                if ex.shipped:
                    chunk_op(ex.flow_id, self.clock(), chunk)
                else:
                    try:
                        self._scout(ex, chunk)
                    except Exception as exc:  # noqa: BLE001: a tap must never raise (the chunk would be lost)
                        self._fault(ex, exc)
            if callable(downstream):
                return downstream(chunk)
            return chunk

        flow.response.stream = tap

    def _ship_stream(self, ex: Exchange) -> None:
        self.journal.stream(ex.flow_id, ex.session.id, ex.row["content_encoding"])
        for ts, chunk in ex.early:
            self.journal.chunk(ex.flow_id, ts, chunk)
        ex.early.clear()
        ex.scout = None
        ex.shipped = True

    def _scout(self, ex: Exchange, chunk: bytes) -> None:
        """A stream whose session is not known: its first event tells (an `endpoint` event:
        a legacy session; a message: the sessionless group of its client)."""
        ex.early.append((self.clock(), chunk))
        for op in ex.scout.cut([("chunk", ex.flow_id, 0.0, chunk)]):
            if op[0] == "frame":
                self._join(ex, ex.stateless_key)
                return
        endpoint = ex.scout.endpoint(ex.flow_id)
        if endpoint is not None:
            ex.row["endpoint"] = endpoint
            self._join(ex, ("sse", ex.upstream, _legacy_token(endpoint) or endpoint), transport="sse")

    def _fault(self, ex: Exchange, exc: Exception) -> None:
        self.errors += 1
        ex.row["outcome"] = f"tap fault: {type(exc).__name__}: {exc}"
        ex.scout = None
        log.error(f"mcptap: cannot read the start of the stream of {ex.url}: {type(exc).__name__}: {exc} "
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
        ex.row["ended_at"] = ended_at
        ex.row["outcome"] = ex.row["outcome"] or outcome
        self.journal.exchange(dict(ex.row))
        if ex.legacy_stream and ex.session is not None and ex.session.transport == "sse":
            self._end_session(ex.session, ended_at)

    # -- sessions ------------------------------------------------------------------------------

    @staticmethod
    def _is_mcp_request(method: str, h: dict[str, str], body: bytes) -> bool:
        if "mcp-session-id" in h or "mcp-protocol-version" in h:
            return True
        if method == "POST":
            return b'"jsonrpc"' in body
        if method == "GET":
            return "text/event-stream" in h.get("accept", "")
        return False

    def _key_at_request(self, ex: Exchange, req: http.Request, h: dict[str, str], body: bytes) -> tuple | None:
        """The session, where the request alone tells it; None: its answer will.

        A request without the session id, or with one the server never assigned, sent on a
        client connection that carried a session's requests, belongs to that session (that is
        how the analysis can tell a missing or wrong Mcp-Session-Id); a 2026-07-28 request
        never does (it has no session)."""
        sid = h.get("mcp-session-id")
        held = self.by_connection.get(ex.connection)
        if held is not None and not self.sessions[held].open:
            held = None
        if sid:
            key = ("http", ex.upstream, sid)
            if key in self.sessions or held is None:
                return key
            return held
        token = _legacy_token(req.url)
        if token is not None and req.method == "POST":
            return ("sse", ex.upstream, token)
        initialize = req.method == "POST" and b'"initialize"' in body
        modern = h.get("mcp-protocol-version", "") >= MODERN_ERA
        if held is not None and not initialize and not modern:
            return held
        if req.method == "GET":
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
        ex.row["session_id"] = session.id
        if key[0] == "http" and ex.connection:
            self.by_connection[ex.connection] = key
        for ts, direction, raw, event_id, incomplete in ex.pending:
            self.journal.frame(store.http_frame_row(session.id, 0, ts, direction, raw, ex.flow_id, event_id, incomplete))
        ex.pending.clear()
        if ex.streaming and not ex.shipped:
            self._ship_stream(ex)

    def _new_session(self, key: tuple, transport: str, ex: Exchange) -> Session:
        session = self.sessions[key] = Session(self.new_id(key), key, transport)
        upstream, _ = self.redactor.url(ex.upstream)
        self.journal.session({
            "id": session.id, "transport": transport, "label": self.label, "started_at": ex.started_at,
            "upstream": upstream, "recorder": self.recorder, "host": socket.gethostname(), "pid": os.getpid(),
            **({"source": self.source} if self.source else {}),
        })
        return session

    def _end_session(self, session: Session, ended_at: float) -> None:
        if session.open:
            session.open = False
            self.journal.end(session.id, ended_at)

    def _frame(self, ex: Exchange, ts: float, direction: str, raw: bytes, event_id: str | None,
               incomplete: int = 0) -> None:
        if ex.session is None:
            ex.pending.append((ts, direction, raw, event_id, incomplete))
            return
        self.journal.frame(store.http_frame_row(ex.session.id, 0, ts, direction, raw, ex.flow_id, event_id,
                                                incomplete))
