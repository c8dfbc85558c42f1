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
import marshal
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from mcptap.addons.shipping.background import hurry, recorder_env, recorder_main, wait_hurried
from mcptap.addons.shipping.chunkqueue import ChunkQueue
from mcptap.addons.http.streams import Streams
from mcptap.wire.bounded import DEFAULT_MAX_FRAME
from mcptap.addons.shipping.chunkwire import HEADER, STREAM_INDEX, RecordReader
from mcptap.store.journal import Collector, Journal, Sink
from mcptap.store.ops import CloseOp, Op, RawExchangeOp, SessionOp, StreamOp, named, plain
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.errors import warn_stderr

SHIP_INTERVAL_S = 0.05
PACK_BYTES = 256 << 10  # a marshalled batch
SHIP_BYTES = 1 << 20  # taken from the queue at once
PIPE_BYTES = 1 << 20  # the pipe to the recorder process (Linux: F_SETPIPE_SZ)
READ_PAUSE_S = 0.02  # the recorder process reads at most this often


class RemoteJournal(Collector):
    """The addon's journal: ops queued here by the event loop; a packer thread marshals them every
    SHIP_INTERVAL_S into a ChunkQueue (memory up to 8 MiB, then an unlinked overflow file, as the
    stdio tee does: the proxy's memory stays bounded while the recorder process lags); a writer
    thread hands the queue to the recorder process."""

    def __init__(self, db_path: str, *, warn: Callable[[str], None] = warn_stderr, redaction: Redaction | None = None,
                 max_frame: int = DEFAULT_MAX_FRAME, process: tuple[tuple[str, ...], dict] | None = None):
        """`process`: (words after `python -m`, environment added) of the recorder process, in
        place of this module's (one that runs it with more, as the live telemetry does)."""
        self._process = process or (("mcptap.addons.http.recorder",), {})
        Sink(db_path, warn=warn).close()  # the database opens (and has its tables) before the proxy starts
        self.db_path = db_path
        self.max_frame = max_frame
        self.redaction = redaction or Redaction()
        self.ops: deque[Op] = deque()
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
        """An exchange as the tap saw it (addons/http/book.py `Exchange.snapshot`): its row is made
        in the recorder process (addons/http/streams.py `exchange_row`), off the proxy's event loop."""
        self.ops.append(RawExchangeOp(snapshot))

    def _start(self) -> subprocess.Popen | None:
        words, added = self._process
        env = {**recorder_env(), **added}
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-m", *words, self.db_path,
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
            status = wait_hurried(self._proc)
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
            self._put(ops, marshal.dumps(plain(ops)))

    def _put(self, ops: list[Op], payload: bytes) -> None:
        """Queue a batch; one larger than PACK_BYTES (a flood) goes as halves, so that the
        queue's memory bound holds."""
        if len(payload) > PACK_BYTES and len(ops) > 1:
            del payload  # a large frame's batch: one marshalled copy at a time, not two
            half = len(ops) // 2
            for part in (ops[:half], ops[half:]):
                self._put(part, marshal.dumps(plain(part)))
            return
        meta = [op for op in ops if isinstance(op, (SessionOp, StreamOp, CloseOp))]
        if meta:  # what a fallback would need, in order with the ops
            self.queue.put("meta", 0.0, marshal.dumps(plain(meta)))
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
                    closing = self._note(named(marshal.loads(payload)))
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
        self._local.ops.extend(op._replace(again=True) if op.__class__ is SessionOp else op
                               for op in named(marshal.loads(payload)))

    def _note(self, ops: list[Op]) -> list[str]:
        """Sessions and streams of the batch to come; the streams it closes."""
        closing = []
        for op in ops:
            if op.__class__ is SessionOp:
                self._sessions[op.row["id"]] = op.row
            elif op.__class__ is StreamOp:
                self._streams[op.exchange_id] = (op.session_id, op.encoding)
            else:
                closing.append(op.exchange_id)
        return closing

    def _fall_back(self, why: str) -> None:
        self._warn(f"{why}; recording goes on inside the proxy")
        streams = Streams(Redactor(keep=self.redaction.keep), max_frame=self.max_frame)
        self._local = Journal(self.db_path, warn=self._warn, transform=streams.cut,
                              redactor=FrameRedactor(self.redaction))
        for session in self._sessions.values():  # it may not have stored them
            self._local.ops.append(SessionOp(session, again=True))
        for exchange_id, (session_id, encoding) in self._streams.items():
            self._local.ops.append(StreamOp(exchange_id, session_id, encoding))


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
                max_frame: int = DEFAULT_MAX_FRAME, watch: Callable[[list[Op]], None] | None = None) -> int:
    """Store the ops the records on `fd` carry; `watch(ops)`: also told each batch as it is
    stored (numbered, redacted; analyzer/store/journal.py Sink)."""
    sink = Sink(db_path, redactor=FrameRedactor(redaction), watch=watch)
    streams = Streams(Redactor(keep=redaction.keep if redaction is not None else False), max_frame=max_frame)
    reader = RecordReader(fd)
    reader.before_read = lambda: time.sleep(READ_PAUSE_S)  # fewer, larger reads: fewer wake-ups beside the proxy
    try:
        for kind, _, payload in reader:
            if kind == STREAM_INDEX["ops"]:
                try:
                    ops = named(marshal.loads(payload))
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
