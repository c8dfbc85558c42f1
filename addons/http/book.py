"""What the HTTP tap knows of sessions and exchanges, apart from mitmproxy's hooks (addons/http/tap.py
calls these): which session an exchange belongs to (docs/mitmproxy-notes.md; the rules are in the
tap's docstring), the exchanges in flight and the frames waiting for their session, a stream's
start read until it tells its session, and what is queued to the journal. Nothing here imports
mitmproxy: an exchange is its raw header fields, a stream its chunks."""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl

from mcptap import store
from mcptap.addons.http import auth
from mcptap.addons.runs import HttpRuns
from mcptap.addons.http.streams import Streams, exchange_row, url_text
from mcptap.ids import new_session_id
from mcptap.redaction import Redactor
from mcptap.store.ops import ChunkOp, FrameOp
from mcptap.wire.bounded import Kept, cut_row
from mcptap.wire.urls import split_url

C2S, S2C = "c2s", "s2c"
log = logging.getLogger("mcptap.addons.http.tap")  # the tap's log: what a mitmdump user reads
LEGACY_KEYS = ("session_id", "sessionId")
MODERN_ERA = b"2026"  # MCP-Protocol-Version values from here on are stateless: no session ids
NAMED_METADATA = 64
"""The metadata URLs named by challenges that are remembered (the latest), each a discovery."""
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
                 "early", "early_bytes", "scout", "legacy_stream", "finished", "kept", "role", "request_body",
                 "response_body", "rewritten", "refused", "metadata")

    def __init__(self, flow_id: str, method: str, url: str | tuple, path: str, upstream: str, started_at: float,
                 request_end: float | None, request_fields: tuple, connection: str, client: str,
                 user_agent: bytes | None) -> None:
        self.flow_id, self.method, self.upstream = flow_id, method, upstream
        self.url, self.path = url, path  # the URL as its parts (addons/http/streams.py url_text), and the path
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
        self.role: str | None = None  # not MCP: the authorization flow's role (addons/http/auth.py), or an error's
        self.request_body: bytes | None = None  # a body that is no frame (a non-MCP exchange's), as it crossed
        self.response_body: bytes | None = None
        self.rewritten: list | None = None  # what `mcptap proxy` changed on the way to the client
        self.refused = False  # an MCP request answered 401/403: it waits for the session its retry joins
        self.metadata = False  # fetches protected-resource metadata (well-known, or where a challenge said)

    @property
    def client_key(self) -> tuple:
        """Its client's address, whatever the upstream (an authorization server is another one) and
        the User-Agent (an SDK's OAuth client sends its discovery requests without one)."""
        return (self.client,)

    @property
    def holds(self) -> bool:
        """An exchange of the authorization flow, or a refused MCP request: it belongs to the session
        its client is in, or the one it goes on to make."""
        return self.refused or (self.role is not None and self.role.startswith("auth-"))

    @property
    def stateless_key(self) -> tuple:
        """Its session when no session id ever tells."""
        return ("stateless", self.upstream, self.client, header_text(self.user_agent) or "")

    def snapshot(self) -> dict:
        """The exchange as seen so far, raw (addons/http/streams.py `exchange_row` makes its row)."""
        return {"id": self.flow_id, "session_id": self.session.id if self.session is not None else None,
                "method": self.method, "url": self.url, "status": self.status,
                "request_fields": self.request_fields, "response_fields": self.response_fields,
                "endpoint": self.endpoint, "started_at": self.started_at, "request_end": self.request_end,
                "response_at": self.response_at, "ended_at": self.ended_at, "outcome": self.outcome,
                "role": self.role, "request_body": self.request_body, "response_body": self.response_body,
                "rewritten": self.rewritten}


def header_fields(fields: tuple) -> dict[bytes, bytes]:
    """Raw header fields by lower-cased name, the first of repeated names (one pass, where each
    `headers.get` of mitmproxy scans them all and decodes)."""
    return {name.lower(): value for name, value in reversed(fields)}


def header_text(value: bytes | None) -> str | None:
    """A header value as mitmproxy gives it (UTF-8, undecodable bytes escaped)."""
    return None if value is None else value.decode("utf-8", "surrogateescape")


def content_length(h: dict[bytes, bytes]) -> int:
    """The Content-Length of a message's header fields (0: none, or none that reads)."""
    value = h.get(b"content-length", b"")
    return int(value) if value.isdigit() and len(value) < 20 else 0


def is_json(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower().endswith(("/json", "+json"))


def is_sse(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower() == "text/event-stream"


def legacy_token(target: str) -> str | None:
    """The legacy session key in a URL's (or a request target's) query."""
    for key, value in parse_qsl(split_url(target).query, keep_blank_values=True):
        if key in LEGACY_KEYS and value:
            return value
    return None


class ExchangeBook:
    """The sessions and exchanges of one tap (McpTap is one, with mitmproxy's hooks): what it
    queues goes to `journal` (a recorder process's RemoteJournal, or an import's journal), the
    URLs and headers through `redactor`."""

    def __init__(self, *, recorder: str, journal, redactor: Redactor, label: str | None, source: str | None) -> None:
        self.recorder = recorder
        self.journal = journal
        self.redactor = redactor
        self.label = label
        self.source = source
        self.clock = time.time  # an import sets the time of the flow being read
        self.new_id = lambda key: new_session_id()  # an import gives ids that a second import finds again
        self.exchanges: dict[str, Exchange] = {}
        self.sessions: dict[tuple, Session] = {}
        self.by_connection: dict[str, tuple] = {}  # client connection -> the session id'd on it last
        self.by_client: dict[tuple, Session] = {}  # client address -> its latest session
        self.held: dict[tuple, list[Exchange]] = {}  # a client's authorization exchanges before it has a session
        self.named_metadata: dict[tuple, None] = {}  # where challenges said their metadata is (auth.metadata_target)
        self.runs = HttpRuns()  # a client's sessions within a window are one run
        self.errors = 0  # faults inside a tap, each said once in the log
        self._raw_rows = hasattr(journal, "exchange_raw")  # the journal redacts and serialises exchanges itself

    def _ship_stream(self, ex: Exchange) -> None:
        self.journal.stream(ex.flow_id, ex.session.id, ex.content_encoding)
        for ts, chunk in ex.early or ():
            self.journal.chunk(ex.flow_id, ts, chunk)
        ex.early = ex.scout = None
        ex.early_bytes = 0
        ex.shipped = True

    def _scout(self, ex: Exchange, chunk: bytes) -> None:
        """A stream whose session is not known: its first event with data tells (an `endpoint`
        event: a legacy session; a message: the sessionless group of its client), however the
        stream was cut into chunks (an endpoint and the first message may come in one)."""
        ex.early.append((self.clock(), chunk))
        ex.early_bytes += len(chunk)
        ops = ex.scout.cut([ChunkOp(ex.flow_id, 0.0, chunk)])
        endpoint = ex.scout.endpoint(ex.flow_id)  # announced before any message
        if endpoint is not None:
            ex.endpoint = endpoint
            self._join(ex, ("sse", ex.upstream, legacy_token(endpoint) or endpoint), transport="sse")
        elif any(op.__class__ is FrameOp for op in ops) or ex.early_bytes >= SCOUT_BYTES:
            self._join(ex, ex.stateless_key)  # a message first, or no endpoint in time: no legacy stream

    def _note_challenge(self, values: list[bytes]) -> None:
        """Remember where the `resource_metadata` of a 401/403's challenges points (the latest
        NAMED_METADATA places): a request for it is discovery, wherever it is."""
        for value in values:
            for url in auth.challenge_urls(value.decode("latin-1")):
                target = auth.metadata_target(url)
                if target is not None:
                    self.named_metadata.pop(target, None)
                    self.named_metadata[target] = None
                    while len(self.named_metadata) > NAMED_METADATA:
                        del self.named_metadata[next(iter(self.named_metadata))]

    def _named_metadata(self, scheme: str, host: str, port: int, path: str) -> bool:
        return bool(self.named_metadata) and (scheme.lower(), host.lower(), port, path) in self.named_metadata

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
        if ex.session is None and ex.holds:  # the session its client is in, else the next one it makes
            session = self.by_client.get(ex.client_key)
            if session is not None and session.open:
                self._join(ex, session.key)
            else:
                self.held.setdefault(ex.client_key, []).append(ex)
        elif ex.session is None:  # never told: it joins the sessionless group of its client
            self._join(ex, ex.stateless_key)
        if ex.streaming:
            self.journal.close_stream(ex.flow_id, ended_at)
        ex.ended_at = ended_at
        ex.outcome = ex.outcome or outcome
        self._exchange(ex)
        if ex.legacy_stream and ex.session is not None and ex.session.transport == "sse":
            self._end_session(ex.session, ended_at)


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
        sid = header_text(h.get(b"mcp-session-id"))
        held = self.by_connection.get(ex.connection)
        if held is not None and not self.sessions[held].open:
            held = None
        if sid:
            key = ("http", ex.upstream, sid)
            if key in self.sessions or held is None:
                return key
            return held
        post = ex.method == "POST"
        token = legacy_token(ex.path) if post and "?" in ex.path else None
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
        self.by_client[ex.client_key] = session
        if key[0] == "http" and ex.connection:
            self.by_connection[ex.connection] = key
        for ts, direction, raw, event_id, incomplete, size in ex.pending:
            self.journal.frame(self._row(session.id, ts, direction, raw, ex.flow_id, event_id, incomplete, size))
        ex.pending.clear()
        if ex.streaming and not ex.shipped:
            self._ship_stream(ex)

    def _new_session(self, key: tuple, transport: str, ex: Exchange) -> Session:
        session = self.sessions[key] = Session(self.new_id(key), key, transport)
        held = self.held.pop(ex.client_key, ())  # the authorization that came before it: its start is the session's
        upstream, _ = self.redactor.url(ex.upstream)
        text = store.text_cell  # a host, a file name: any bytes (analyzer/store/__init__.py)
        agent = ex.user_agent.decode("latin-1") if isinstance(ex.user_agent, bytes) else ex.user_agent
        address, agent = text(ex.client) if ex.client else None, text(agent) if agent else None
        self.journal.session({
            "id": session.id, "transport": transport, "label": text(self.label),
            "started_at": min([ex.started_at, *(h.started_at for h in held)]),
            "upstream": text(upstream), "recorder": self.recorder, "host": text(socket.gethostname()),
            "pid": os.getpid(), **({"source": text(self.source)} if self.source else {}),
            "client": HttpRuns.client(address, agent),
            # a run is what a live proxy saw one client start; an import (a HAR, a dump) cannot tell
            **({} if self.source else {"run": self.runs.run_for(address, agent, ex.started_at)}),
        })
        for h in held:
            self._adopt(h, session)
        return session

    def _adopt(self, ex: Exchange, session: Session) -> None:
        """An exchange held until its client had a session: stored again, in that session."""
        ex.session = session
        for ts, direction, raw, event_id, incomplete, size in ex.pending:
            self.journal.frame(self._row(session.id, ts, direction, raw, ex.flow_id, event_id, incomplete, size))
        ex.pending.clear()
        self._exchange(ex)

    def release_held(self) -> None:
        """At the end: exchanges whose client never made a session join its sessionless group."""
        for key in list(self.held):
            first = self.held[key][0]
            session = self.sessions.get(first.stateless_key)
            if session is None or not session.open:
                self._new_session(first.stateless_key, "http", first)  # which adopts them
            else:
                for ex in self.held.pop(key):
                    self._adopt(ex, session)

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
