"""The HTTP capture's recorder process, and the shipper that feeds it.

The addon (addons/http/tap.py) does no more on mitmproxy's event loop than append what it saw to
a queue: sessions, request frames, exchanges (raw: their header fields as mitmproxy holds them),
and each chunk of an SSE answer as it passed. Every SHIP_INTERVAL_S a thread marshals what
gathered into a ChunkQueue (addons/shipping/chunkqueue.py: bounded memory, then an overflow file), and
another writes that to `python -P -m mcptap.addons.http.recorder DB` (addons/shipping/chunkwire.py records); there
exchanges get their rows (`exchange_row`: headers decoded, redacted, as JSON), the chunks are
decompressed and cut into events (`Streams`) and everything is stored (analyzer/store/journal.py
`Sink`). Redaction, parsing and SQLite never hold the proxy's interpreter lock, and a recorder
that falls behind costs the proxy disk, not memory.

If the process cannot be started, or dies, the rest goes through the same steps in a thread of
the proxy (`Journal`), with one warning: what the process had not stored is lost (it is said),
and streams open at that moment go on from their next chunk (an event cut there may be lost)."""

from __future__ import annotations

import fcntl
import json
import marshal
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from mcptap.addons.shipping.background import hurry, recorder_env, recorder_main
from mcptap.addons.shipping.chunkqueue import ChunkQueue
from mcptap.wire.bounded import DEFAULT_MAX_FRAME, Decoder, cut_row
from mcptap.addons.shipping.chunkwire import HEADER, STREAM_INDEX, RecordReader
from mcptap.wire.sse import SSEParser
from mcptap import store
from mcptap.store.journal import Collector, Journal, Sink
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.errors import warn_stderr

SHIP_INTERVAL_S = 0.05
PACK_BYTES = 256 << 10  # a marshalled batch
SHIP_BYTES = 1 << 20  # taken from the queue at once
PIPE_BYTES = 1 << 20  # the pipe to the recorder process (Linux: F_SETPIPE_SZ)
READ_PAUSE_S = 0.02  # the recorder process reads at most this often


# -- cutting SSE answers into frames -----------------------------------------------------------

def _decoder(encoding: str | None) -> Decoder | None:
    """An incremental decompressor for a content-encoded stream (None: none needed), a step at
    a time (analyzer/wire/bounded.py)."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return None
    return Decoder(name)


class _Stream:
    __slots__ = ("session_id", "decoder", "parser", "events", "fault", "last_ts", "endpoint")

    def __init__(self, session_id: str, encoding: str | None, limit: int = DEFAULT_MAX_FRAME):
        self.session_id = session_id
        self.parser = SSEParser(limit)
        self.events = 0
        self.fault: str | None = None
        self.last_ts = 0.0
        self.endpoint: str | None = None  # what a legacy `endpoint` event announced
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
    """The `exchanges` row of an exchange queued raw (addons/http/tap.py `Exchange.snapshot`):
    header fields decoded as mitmproxy decodes them, the MCP headers in their columns,
    credentials in headers and URL redacted (analyzer/redaction/__init__.py), headers as JSON; every text
    cell one SQLite stores, whatever bytes came (analyzer/store/__init__.py `json_cell`, `text_cell`)."""
    request = _decoded(raw["request_fields"])
    h = _lookup(request)
    url, redacted_url = redactor.url(url_text(raw["url"]))
    request_headers, redacted = redactor.headers(request)
    redacted += redacted_url
    response_headers = None
    r: dict[str, str] = {}
    if raw["response_fields"] is not None:
        response = _decoded(raw["response_fields"])
        r = _lookup(response)
        stored, redacted_response = redactor.headers(response)
        response_headers = store.json_cell(stored)
        redacted += redacted_response
    status = raw["status"]
    text = store.text_cell
    endpoint = raw["endpoint"]
    if endpoint is not None:  # the legacy endpoint is a URL too: redacted as the exchange's (same tokens)
        endpoint, redacted_endpoint = redactor.url(endpoint)
        redacted += [f"endpoint:{what}" for what in redacted_endpoint]
    return {
        "id": raw["id"], "session_id": raw["session_id"], "method": text(raw["method"]), "url": text(url),
        "status": status if isinstance(status, int) and 0 <= status <= 999 else None,
        "request_type": text(h.get("content-type")), "response_type": text(r.get("content-type")),
        "mcp_session_id": text(h.get("mcp-session-id")), "assigned_session": text(r.get("mcp-session-id")),
        "protocol_version": text(h.get("mcp-protocol-version")), "accept": text(h.get("accept")),
        "last_event_id": text(h.get("last-event-id")), "content_encoding": text(r.get("content-encoding")),
        "endpoint": text(endpoint), "events": 0,
        "request_headers": store.json_cell(request_headers), "response_headers": response_headers,
        "redacted": json.dumps(redacted) if redacted else None,
        "started_at": raw["started_at"], "request_end": raw["request_end"], "response_at": raw["response_at"],
        "ended_at": raw["ended_at"], "outcome": text(raw["outcome"]),
    }


def _ident(op: tuple) -> str:
    """The exchange an op is about, for a message."""
    what = op[1] if len(op) > 1 else None
    return ascii(what.get("id") if isinstance(what, dict) else what)


class Streams:
    """The SSE answers being recorded, by exchange: chunks in, frame ops out; and exchanges
    queued raw (`xraw`: addons/http/tap.py `Exchange.snapshot`) made into their rows with
    `redactor` (the contract's redaction when none is given)."""

    def __init__(self, redactor: Redactor | None = None, *, max_frame: int = DEFAULT_MAX_FRAME,
                 warn: Callable[[str], None] = warn_stderr) -> None:
        self._max_frame = max_frame  # an event's data beyond it is stored cut (analyzer/wire/bounded.py)
        self._open: dict[str, _Stream] = {}
        self._closed: dict[str, _Stream] = {}  # until their exchange's last snapshot passes
        self._redactor = redactor
        self._warn = warn
        self.faults = 0  # ops that could not be turned into rows, each said in one line

    def cut(self, ops: list[tuple]) -> list[tuple]:
        """`ops` with stream, chunk and close ops turned into frame ops (and exchange rows told
        how many events their stream had, and why it was not recorded if it was not). A chunk
        op's bytes may be an int: that many bytes, no CR or LF among them, continuing a line
        already past the limit (addons/http/tap.py sends the count alone). An op that cannot be
        made into its rows (a bug) is said in one line and the others go on."""
        out: list[tuple] = []
        for op in ops:
            try:
                self._cut(out, op)
            except Exception as exc:  # noqa: BLE001 - one op's failure must not stop the recording
                self.faults += 1
                self._warn(f"cannot record the {op[0]} op of exchange {_ident(op)} ({type(exc).__name__}: "
                           f"{exc}); recording goes on")
        return out

    def _cut(self, out: list[tuple], op: tuple) -> None:
        kind = op[0]
        if kind == "chunk":
            stream = self._open.get(op[1])
            if stream is not None:
                self._feed(out, op[1], stream, op[2], op[3])
        elif kind == "stream":
            self._open[op[1]] = _Stream(op[2], op[3], self._max_frame)
        elif kind == "close":
            stream = self._open.pop(op[1], None)
            if stream is not None:
                self._finish(out, op[1], stream, op[2])
                self._closed[op[1]] = stream
        elif kind == "exchange" or kind == "xraw":
            row = op[1] if kind == "exchange" else exchange_row(op[1], self._header_redactor())
            stream = self._open.get(row["id"]) or self._closed.pop(row["id"], None)
            if stream is not None:
                row = dict(row, events=stream.events)
                if stream.fault and not (row.get("outcome") or "").startswith("error"):
                    row["outcome"] = stream.fault
            out.append(("exchange", row))
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
            if event.type == "endpoint" and event.data is not None and stream.endpoint is None:
                stream.endpoint = event.data.decode("utf-8", "replace")
            elif event.data:  # no data, an empty (priming) event, an endpoint: no message
                row = store.http_frame_row(sid, 0, ts, "s2c", event.data, exchange_id,
                                           event.id if event.has_id else None)
                out.append(("frame", row if event.full_size is None else cut_row(row, event.full_size)))

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
            out.append(("frame", row if size <= len(left) else cut_row(row, size)))


# -- the proxy's side --------------------------------------------------------------------------

class RemoteJournal(Collector):
    """The addon's journal: ops queued here by the event loop; a packer thread marshals them every
    SHIP_INTERVAL_S into a ChunkQueue (memory up to 8 MiB, then an unlinked overflow file, as the
    stdio tee does: the proxy's memory stays bounded while the recorder process lags); a writer
    thread hands the queue to the recorder process."""

    def __init__(self, db_path: str, *, warn: Callable[[str], None] = warn_stderr, redaction: Redaction | None = None,
                 max_frame: int = DEFAULT_MAX_FRAME):
        Sink(db_path, warn=warn).close()  # the database opens (and has its tables) before the proxy starts
        self.db_path = db_path
        self.max_frame = max_frame
        self.redaction = redaction or Redaction()
        self.ops: deque[tuple] = deque()
        self._warn = warn
        self._local: Journal | None = None
        self._said: set[tuple[str, str]] = set()  # failures said once each
        self._streams: dict[str, tuple] = {}  # open streams' (session, encoding), should the process die
        self._sessions: dict[str, dict] = {}  # and the sessions
        self.queue = ChunkQueue((os.path.dirname(os.path.abspath(db_path)), None))
        self._proc = self._start()
        self._packing = True
        self._stop = threading.Event()
        self._packer = threading.Thread(target=self._pack_loop, name="mcptap-packer", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="mcptap-shipper", daemon=True)
        self._packer.start()
        self._writer.start()

    def exchange_raw(self, snapshot: dict) -> None:
        """An exchange as the tap saw it (addons/http/tap.py `Exchange.snapshot`): its row is made
        in the recorder process (`exchange_row`), off the proxy's event loop."""
        self.ops.append(("xraw", snapshot))

    def _start(self) -> subprocess.Popen | None:
        env = recorder_env()
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-m", "mcptap.addons.http.recorder", self.db_path,
                                     "--max-frame", str(self.max_frame), *self.redaction.to_args()],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, bufsize=0, env=env,
                                    process_group=0)
        except OSError as exc:
            self._fall_back(f"cannot start the recorder process ({exc.strerror or exc})")
            return None
        try:  # room for a flood's worth of batches between two of its reads
            fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except (OSError, AttributeError):
            pass
        return proc

    def close(self) -> None:
        """Ship the rest, then wait for the recorder process to store it all."""
        if self._proc is not None:
            hurry(self._proc.pid)
        self._stop.set()
        self._packer.join()
        self._pack()
        self._packing = False
        self.queue.wake()
        self._writer.join()
        if self._proc is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
            status = self._proc.wait()
            if status != 0 and self._local is None:
                self._warn(f"the HTTP recorder process ended with status {status}")
        if self._local is not None:
            self._local.close()
        self.queue.close()

    # -- the packer: ops -> queue (never waits) ------------------------------------------------

    def _pack_loop(self) -> None:
        while not self._stop.wait(SHIP_INTERVAL_S):
            self._guarded(self._pack, "queue what the proxy saw")

    def _guarded(self, step: Callable[[], object], what: str):
        """A step of a thread that must never end on a bug: a failure said in one line, once
        for each kind (the thread goes on; the next batch may pass)."""
        try:
            return step()
        except Exception as exc:  # noqa: BLE001
            said = (what, type(exc).__name__)
            if said not in self._said:
                self._said.add(said)
                self._warn(f"cannot {what} ({type(exc).__name__}: {exc}); recording goes on")
            return None

    def _pack(self) -> None:
        ops = [self.ops.popleft() for _ in range(len(self.ops))]
        if ops:
            self._put(ops, marshal.dumps(ops))

    def _put(self, ops: list[tuple], payload: bytes) -> None:
        """Queue a batch; one larger than PACK_BYTES (a flood) goes as halves, so that the
        queue's memory bound holds."""
        if len(payload) > PACK_BYTES and len(ops) > 1:
            del payload  # a large frame's batch: one marshalled copy at a time, not two
            half = len(ops) // 2
            for part in (ops[:half], ops[half:]):
                self._put(part, marshal.dumps(part))
            return
        meta = [op for op in ops if op[0] in ("session", "stream", "close")]
        if meta:  # what a fallback would need, in order with the ops
            self.queue.put("meta", 0.0, marshal.dumps(meta))
        self.queue.put("ops", 0.0, payload)

    # -- the writer: queue -> recorder process (may wait on a full pipe) -----------------------

    def _write_loop(self) -> None:
        while True:
            self.queue.wait(SHIP_INTERVAL_S)
            drained = self._guarded(self._drain, "hand what the proxy saw to the recorder")
            if not self._packing and not drained:
                return

    def _drain(self) -> bool:
        moved = False
        closing: list[str] = []
        while chunks := self.queue.take(SHIP_BYTES):
            moved = True
            for kind, _, payload in chunks:
                if kind == "meta":
                    closing = self._note(marshal.loads(payload))
                else:
                    self._send(payload)
                    for exchange_id in closing:  # a stream is forgotten once its batch is handed over
                        self._streams.pop(exchange_id, None)
                    closing = []
        return moved

    def _send(self, payload: bytes) -> None:
        if self._local is None and self._proc is not None:
            try:
                _write_all(self._proc.stdin.fileno(), HEADER.pack(STREAM_INDEX["ops"], 0.0, len(payload)), payload)
                return
            except (OSError, ValueError):
                self._fall_back("the recorder process is gone (what it had not stored is lost)")
        # a session this batch begins may be among those the fallback sent again: stored once
        self._local.ops.extend(("session", op[1], "again") if op[0] == "session" else op
                               for op in marshal.loads(payload))

    def _note(self, ops: list[tuple]) -> list[str]:
        """Sessions and streams of the batch to come; the streams it closes."""
        closing = []
        for op in ops:
            if op[0] == "session":
                self._sessions[op[1]["id"]] = op[1]
            elif op[0] == "stream":
                self._streams[op[1]] = (op[2], op[3])
            else:
                closing.append(op[1])
        return closing

    def _fall_back(self, why: str) -> None:
        self._warn(f"{why}; recording goes on inside the proxy")
        streams = Streams(Redactor(keep=self.redaction.keep), max_frame=self.max_frame)
        self._local = Journal(self.db_path, warn=self._warn, transform=streams.cut,
                              redactor=FrameRedactor(self.redaction))
        for session in self._sessions.values():  # it may not have stored them
            self._local.ops.append(("session", session, "again"))
        for exchange_id, (session_id, encoding) in self._streams.items():
            self._local.ops.append(("stream", exchange_id, session_id, encoding))


def _write_all(fd: int, head: bytes, payload: bytes) -> None:
    """A record's header and payload, written whole (never joined: a payload may be large)."""
    views = [memoryview(head), memoryview(payload)]
    while views:
        written = os.writev(fd, views)
        while views and written >= len(views[0]):
            written -= len(views[0])
            views.pop(0)
        if views and written:
            views[0] = views[0][written:]


# -- the recorder process ----------------------------------------------------------------------

def record_from(fd: int, db_path: str, redaction: Redaction | None = None, *,
                max_frame: int = DEFAULT_MAX_FRAME) -> int:
    sink = Sink(db_path, redactor=FrameRedactor(redaction))
    streams = Streams(Redactor(keep=redaction.keep if redaction is not None else False), max_frame=max_frame)
    reader = RecordReader(fd)
    reader.before_read = lambda: time.sleep(READ_PAUSE_S)  # fewer, larger reads: fewer wake-ups beside the proxy
    try:
        for kind, _, payload in reader:
            if kind == STREAM_INDEX["ops"]:
                try:
                    ops = marshal.loads(payload)
                    del payload  # a large frame's batch: its one copy is the ops' now
                    ops = streams.cut(ops)
                except Exception as exc:  # noqa: BLE001 - `cut` guards each op; this is a batch it cannot read
                    warn_stderr(f"the HTTP recorder cannot read a batch ({type(exc).__name__}: {exc}); recording goes on")
                    continue
                sink.write(ops)  # which spools what the database does not take
    finally:
        sink.close()
    return 0


def main() -> None:
    recorder_main(record_from, "mcptap.addons.http.recorder", "the HTTP recorder")


if __name__ == "__main__":
    main()
