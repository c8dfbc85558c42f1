"""What the HTTP capture's recorder makes of what the tap queued (addons/http/tap.py): each SSE
answer's chunks decompressed and cut into events, each event with data a frame (`Streams`), and
each exchange queued raw made into its `exchanges` row (`exchange_row`: headers decoded,
redacted, as JSON). It runs in the recorder process (addons/http/recorder.py), in the proxy's
fallback thread, and in an import."""

from __future__ import annotations

import json
from collections.abc import Callable

from mcptap import store
from mcptap.errors import warn_stderr
from mcptap.redaction import Redactor
from mcptap.redaction.exchanges import redact_exchange
from mcptap.store.ops import ChunkOp, CloseOp, ExchangeOp, FrameOp, Op, RawExchangeOp, StreamOp
from mcptap.wire.bounded import DEFAULT_MAX_FRAME, Decoder, cut_row
from mcptap.wire.sse import SSEParser


# -- cutting SSE answers into frames -----------------------------------------------------------

def _decoder(encoding: str | None) -> Decoder | None:
    """An incremental decompressor for a content-encoded stream (None: none needed), a step at
    a time (analyzer/wire/bounded.py)."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return None
    return Decoder(name)


class _Stream:
    __slots__ = ("session_id", "decoder", "parser", "events", "fault", "last_ts", "endpoint", "framed")

    def __init__(self, session_id: str, encoding: str | None, limit: int = DEFAULT_MAX_FRAME):
        self.session_id = session_id
        self.parser = SSEParser(limit)
        self.events = 0
        self.fault: str | None = None
        self.last_ts = 0.0
        self.endpoint: str | None = None  # what a legacy `endpoint` event announced before any message
        self.framed = False  # a message event was cut
        try:
            self.decoder = _decoder(encoding)
        except (ValueError, ImportError) as exc:
            self.decoder, self.parser, self.fault = None, None, f"not recorded: {exc}"


def _lookup(fields: list[tuple[str, str]]) -> dict[str, str]:
    lookup: dict[str, str] = {}
    for name, value in fields:
        lookup.setdefault(name.lower(), value)  # the first of repeated names
    return lookup


def url_text(url: str | tuple) -> str:
    """A request's URL from its parts (scheme, host, port, path), as mitmproxy's `Request.url`
    makes it; a URL already made, as it is."""
    if isinstance(url, str):
        return url
    from mitmproxy.net.http.url import unparse

    return unparse(*url)


def _decoded(fields) -> list[tuple[str, str]]:
    """Raw header fields decoded as mitmproxy decodes them (UTF-8, each other byte a lone
    surrogate: analyzer/store/__init__.py `json_cell` and `text_cell` store that losslessly)."""
    return [(name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
            for name, value in fields]


def exchange_row(raw: dict, redactor: Redactor) -> dict:
    """The `exchanges` row of an exchange queued raw (addons/http/book.py `Exchange.snapshot`):
    header fields decoded as mitmproxy decodes them, the MCP headers in their columns,
    credentials in headers, URL, endpoint and bodies redacted by the one redaction of an exchange
    (analyzer/redaction/exchanges.py), headers as JSON; every text cell one SQLite stores, whatever
    bytes came (analyzer/store/__init__.py `json_cell`, `text_cell`)."""
    request = _decoded(raw["request_fields"])
    h = _lookup(request)
    response = _decoded(raw["response_fields"]) if raw["response_fields"] is not None else None
    r = _lookup(response) if response is not None else {}
    status = raw["status"]
    text = store.text_cell
    fields = redact_exchange(redactor, {
        "url": url_text(raw["url"]), "endpoint": raw["endpoint"], "request_headers": request,
        "response_headers": response, "request_type": h.get("content-type"), "response_type": r.get("content-type"),
        "request_body": raw.get("request_body"), "response_body": raw.get("response_body")})
    redacted = fields.get("redacted")
    rewritten = raw.get("rewritten")
    return {
        "id": raw["id"], "session_id": raw["session_id"], "method": text(raw["method"]), "url": text(fields["url"]),
        "status": status if isinstance(status, int) and 0 <= status <= 999 else None,
        "request_type": text(h.get("content-type")), "response_type": text(r.get("content-type")),
        "mcp_session_id": text(h.get("mcp-session-id")), "assigned_session": text(r.get("mcp-session-id")),
        "protocol_version": text(h.get("mcp-protocol-version")), "accept": text(h.get("accept")),
        "last_event_id": text(h.get("last-event-id")), "content_encoding": text(r.get("content-encoding")),
        "endpoint": text(fields["endpoint"]), "events": 0,
        "request_headers": store.json_cell(fields["request_headers"]),
        "response_headers": store.json_cell(fields["response_headers"]) if response is not None else None,
        "redacted": json.dumps(redacted) if redacted else None,
        "started_at": raw["started_at"], "request_end": raw["request_end"], "response_at": raw["response_at"],
        "ended_at": raw["ended_at"], "outcome": text(raw["outcome"]),
        "role": raw.get("role"), "request_body": text(fields["request_body"]), "response_body": text(fields["response_body"]),
        "rewritten": store.json_cell(rewritten) if rewritten else None,
    }


def _ident(op: Op) -> str:
    """The exchange an op is about, for a message."""
    what = op[0] if op else None
    return ascii(what.get("id") if isinstance(what, dict) else what)


class Streams:
    """The SSE answers being recorded, by exchange: chunks in, frame ops out; and exchanges
    queued raw (RawExchangeOp: addons/http/book.py `Exchange.snapshot`) made into their rows with
    `redactor` (the contract's redaction when none is given)."""

    def __init__(self, redactor: Redactor | None = None, *, max_frame: int = DEFAULT_MAX_FRAME,
                 warn: Callable[[str], None] = warn_stderr) -> None:
        self._max_frame = max_frame  # an event's data beyond it is stored cut (analyzer/wire/bounded.py)
        self._open: dict[str, _Stream] = {}
        self._closed: dict[str, _Stream] = {}  # until their exchange's last snapshot passes
        self._redactor = redactor
        self._warn = warn
        self.faults = 0  # ops that could not be turned into rows, each said in one line

    def cut(self, ops: list[Op]) -> list[Op]:
        """`ops` with stream, chunk and close ops turned into frame ops (and exchange rows told
        how many events their stream had, and why it was not recorded if it was not). A chunk
        op's bytes may be an int: that many bytes, no CR or LF among them, continuing a line
        already past the limit (addons/http/tap.py sends the count alone). An op that cannot be
        made into its rows (a bug) is said in one line and the others go on."""
        out: list[Op] = []
        for op in ops:
            try:
                self._cut(out, op)
            except Exception as exc:  # noqa: BLE001 - one op's failure must not stop the recording
                self.faults += 1
                self._warn(f"cannot record the {op.kind} op of exchange {_ident(op)} ({type(exc).__name__}: "
                           f"{exc}); recording goes on")
        return out

    def _cut(self, out: list[Op], op: Op) -> None:
        kind = op.__class__
        if kind is ChunkOp:
            stream = self._open.get(op.exchange_id)
            if stream is not None:
                self._feed(out, op.exchange_id, stream, op.ts, op.data)
        elif kind is StreamOp:
            self._open[op.exchange_id] = _Stream(op.session_id, op.encoding, self._max_frame)
        elif kind is CloseOp:
            stream = self._open.pop(op.exchange_id, None)
            if stream is not None:
                self._finish(out, op.exchange_id, stream, op.ts)
                self._closed[op.exchange_id] = stream
        elif kind is ExchangeOp or kind is RawExchangeOp:
            row = op.row if kind is ExchangeOp else exchange_row(op.snapshot, self._header_redactor())
            stream = self._open.get(row["id"]) or self._closed.pop(row["id"], None)
            if stream is not None:
                row = dict(row, events=stream.events)
                if stream.fault and not (row.get("outcome") or "").startswith("error"):
                    row["outcome"] = stream.fault
            out.append(ExchangeOp(row))
        else:
            out.append(op)

    def _header_redactor(self) -> Redactor:
        if self._redactor is None:
            self._redactor = Redactor()  # loads the key: only once an exchange needs it
        return self._redactor

    def endpoint(self, exchange_id: str) -> str | None:
        stream = self._open.get(exchange_id)
        return stream.endpoint if stream is not None else None

    def _feed(self, out: list, exchange_id: str, stream: _Stream, ts: float, data: bytes) -> None:
        if stream.parser is None:
            return
        stream.last_ts = ts
        if data.__class__ is int:  # the count of bytes continuing a line past the limit (addons/http/tap.py)
            stream.parser.skip(data)
            return
        try:
            if stream.decoder is not None:
                for piece in stream.decoder.decode(data):  # a step at a time: a bomb costs no memory
                    self._events(out, exchange_id, stream, ts, stream.parser.feed(piece))
            elif data:
                self._events(out, exchange_id, stream, ts, stream.parser.feed(data))
        except Exception as exc:  # noqa: BLE001 - a stream that cannot be read is said, not fatal
            stream.parser, stream.fault = None, f"not decodable: {type(exc).__name__}: {exc}"

    @staticmethod
    def _events(out: list, exchange_id: str, stream: _Stream, ts: float, events) -> None:
        sid = stream.session_id
        for event in events:
            stream.events += 1
            if event.type == "endpoint" and event.data is not None:
                if stream.endpoint is None and not stream.framed:
                    stream.endpoint = event.data.decode("utf-8", "replace")
            elif event.data:  # no data, an empty (priming) event, an endpoint: no message
                stream.framed = True
                row = store.http_frame_row(sid, 0, ts, "s2c", event.data, exchange_id,
                                           event.id if event.has_id else None)
                out.append(FrameOp(row if event.full_size is None else cut_row(row, event.full_size)))

    def _finish(self, out: list, exchange_id: str, stream: _Stream, ts: float) -> None:
        if stream.parser is None:
            return
        if stream.decoder is not None:
            try:
                for piece in stream.decoder.flush():
                    self._events(out, exchange_id, stream, ts, stream.parser.feed(piece))
            except Exception:  # noqa: BLE001
                pass
            if stream.parser is None:
                return
        parser, stream.parser = stream.parser, None  # what it kept goes with it: one copy of the frame, not two
        left, size = parser.incomplete, parser.incomplete_size
        del parser
        if left.strip():
            row = store.http_frame_row(stream.session_id, 0, ts, "s2c", left, exchange_id, None, 1)
            out.append(FrameOp(row if size <= len(left) else cut_row(row, size)))
