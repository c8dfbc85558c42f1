"""Client-side connections to a live MCP server, for `mcptap replay`: over stdio (a child
process, here), Streamable HTTP, or legacy HTTP+SSE (analyzer/replay/live_http.py). Each sends
frames as they are given, puts every frame the server sends into an inbox (a queue of `Inbound`)
from reader threads, and records both directions, byte for byte with their times, as one session
(`Recording`).

Nothing here understands MCP beyond the transport: which headers to send and where answers
come back. The replay driver (analyzer/replay/__init__.py) decides what to send."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

from mcptap import store

from mcptap.errors import MCPTapError, warn_stderr
from mcptap.store.writer import SessionWriter
from mcptap.wire.bounded import DEFAULT_MAX_FRAME, cut_row
from mcptap.wire.framing import LineFramer

CONNECT_TIMEOUT_S = 10.0
STOP_GRACE_S = 2.0


@dataclass(frozen=True)
class Inbound:
    """What a reader thread saw: a frame from the server (`raw`), or the end of the connection
    (`closed`, saying why). `size`: the full size of a frame longer than --max-frame, of which
    `raw` holds the first max-frame bytes (None: `raw` is the whole frame)."""

    ts: float
    raw: bytes | None = None
    closed: str | None = None
    size: int | None = None


class Recording:
    """One session of the database, written as frames pass (analyzer/store/writer.py SessionWriter: its
    own thread, a spool file if the database refuses)."""

    def __init__(self, db_path: str, session: dict, redaction=None):
        from mcptap.redaction import FrameRedactor

        self.id = session["id"]
        self._redactor = FrameRedactor(redaction)
        self._writer = SessionWriter(db_path, self._redactor.session_fields(session), warn=warn_stderr)
        self._writer.start()
        self._lock = threading.Lock()
        self._seq = 0
        self._stderr_seq = 0

    def frame(self, direction: str, raw: bytes, ts: float | None = None, size: int | None = None) -> None:
        """Record a frame; `size`: the full size of one cut at --max-frame (stored cut and marked,
        as the tee stores it). Redacted on its bytes, before the row is made (one copy: the row's)."""
        with self._lock:
            self._seq += 1
            paths = None
            if not self._redactor.off:
                raw, paths = self._redactor.frame(raw)
            row = store.frame_row(self.id, self._seq, time.time() if ts is None else ts, direction, raw, 0,
                                  None if paths is None else json.dumps(paths))
            if size is not None and size > len(raw):
                row = cut_row(row, size)
            self._writer.add([row], [], len(raw))

    def stderr(self, raw: bytes) -> None:
        with self._lock:
            self._stderr_seq += 1
            stored = self._redactor.text(raw)[0] if not self._redactor.off else raw
            self._writer.add([], [store.stderr_row(self.id, self._stderr_seq, time.time(), stored, 0)], len(raw))

    @property
    def frames(self) -> int:
        return self._seq

    def close(self, exit_status: int | None = None) -> None:
        self._writer.close(time.time(), exit_status)


class Live:
    """The interface the replay driver uses."""

    transport = ""
    describe = ""
    max_frame = DEFAULT_MAX_FRAME  # a longer frame from the server is kept (and recorded) cut at this size

    def __init__(self, inbox: "queue.Queue[Inbound]", recording: Recording | None):
        self.inbox = inbox
        self.recording = recording
        self.protocol_version: str | None = None  # HTTP: the MCP-Protocol-Version header to send

    def start(self) -> None:
        raise NotImplementedError

    def send(self, raw: bytes, message: Any = None) -> None:
        """Send one frame; `message` is its parsed value, when the transport needs to look."""
        raise NotImplementedError

    def close(self) -> int | None:
        raise NotImplementedError

    def _received(self, raw: bytes, size: int | None = None) -> None:
        """A frame from the server; `size`: its full size when `raw` is its first --max-frame bytes."""
        ts = time.time()
        if size is None and len(raw) > self.max_frame:
            raw, size = raw[:self.max_frame], len(raw)
        if self.recording is not None:
            self.recording.frame("s2c", raw, ts, size)
        self.inbox.put(Inbound(ts, raw=raw, size=size))

    def _sent(self, raw: bytes) -> None:
        if self.recording is not None:
            self.recording.frame("c2s", raw)

    def _closed(self, why: str) -> None:
        self.inbox.put(Inbound(time.time(), closed=why))


class StdioLive(Live):
    """The server as a child process: a frame is a line on its stdin or stdout."""

    transport = "stdio"

    def __init__(self, command: str | list[str], inbox, recording):
        super().__init__(inbox, recording)
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise MCPTapError("--command is empty")
        self.describe = shlex.join(self.argv)
        self.proc: subprocess.Popen | None = None
        self._write_lock = threading.Lock()
        self.stderr_tail: list[str] = []

    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise MCPTapError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        self._stderr_reader = threading.Thread(target=self._read_stderr, name="mcptap-replay-stderr", daemon=True)
        self._stderr_reader.start()
        threading.Thread(target=self._read_stdout, name="mcptap-replay-stdout", daemon=True).start()

    def _read_stdout(self) -> None:
        """Lines as they come, each kept up to --max-frame bytes (a longer one is never held whole)."""
        framer = LineFramer(self.max_frame)
        with self.proc.stdout:  # closed at its end: a command run in-process (the tests) leaks no pipe
            while chunk := self.proc.stdout.read1(1 << 16):
                lines = framer.feed(chunk)
                cut = framer.cut or {}
                for i, line in enumerate(lines):
                    self._received(line, cut.get(i))
        size = framer.size
        tail = framer.finish()
        if tail is not None:
            self._received(tail, size if size > len(tail) else None)
        status = self.proc.wait()
        self._stderr_reader.join(1.0)  # its last words, for the message
        tail = f": {self.stderr_tail[-1]}" if self.stderr_tail else ""
        self._closed(f"the server exited with status {status}{tail}")

    def _read_stderr(self) -> None:
        with self.proc.stderr:
            for line in self.proc.stderr:
                text = line.rstrip(b"\r\n")
                if self.recording is not None:
                    self.recording.stderr(text)
                self.stderr_tail = (self.stderr_tail + [text.decode("utf-8", "replace")])[-5:]

    def send(self, raw: bytes, message: Any = None) -> None:
        with self._write_lock:
            self._sent(raw)
            try:
                self.proc.stdin.write(raw + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the server is gone: its stdout reader says so

    def close(self) -> int | None:
        if self.proc is None:
            return None
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:  # the whole group: a launcher's (uvx, npx) children too
                try:
                    os.killpg(self.proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                return self.proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
        return self.proc.wait()


def why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def session_for(live: Live, original: dict, label: str | None) -> dict:
    """The sessions row of a replay's recording."""
    from mcptap import __version__
    from mcptap.ids import new_session_id

    row = {"id": new_session_id(), "transport": live.transport, "started_at": time.time(),
           "label": label or f"replay of {original.get('label') or original['id'][:13]}",
           "recorder": f"mcptap {__version__} replay", "replay_of": original["id"],
           "host": socket.gethostname(), "pid": os.getpid()}
    if isinstance(live, StdioLive):
        row["command"] = json.dumps(live.argv)
    else:
        row["upstream"] = live.describe
    return row
