"""`mcptap record`: a stdio tee in front of an MCP server (spec: MCP stdio transport, see
spec/mcp-reference.md section 8.1).

The wire comes first. Three pump threads move bytes host->server (stdin), server->host (stdout)
and server stderr->host stderr with blocking reads and writes, chunk by chunk as they arrive,
unchanged. Before forwarding a chunk a pump appends (stream, time, chunk) to a deque: that is the
whole cost of recording on the wire. A recorder thread wakes every POLL_INTERVAL_S, cuts lines
out of the queued chunks (each line a frame, stamped with the time its last byte arrived) and
hands them to the store's SessionWriter, which commits in batches or spools. The tee never
writes to stdout itself; its own messages go to stderr, and only when something is wrong."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque

from analyzer import __version__
from analyzer.errors import MCPTapError
from analyzer.ids import new_session_id
from analyzer.store import stored_raw
from analyzer.writer import STALL_S, SessionWriter, warn_stderr
from addons.framing import LineFramer

CHUNK_SIZE = 1 << 18
"""Largest read per system call; a pipe hands over what it has, so this never delays a byte."""

POLL_INTERVAL_S = 0.01
"""How often the recorder thread cuts frames out of what passed (it is never woken per chunk)."""

TERM_GRACE_S = 5.0
"""After forwarding SIGTERM or SIGHUP (or a second SIGINT), how long the server has to exit
before the tee sends SIGKILL to its process group."""

DRAIN_AFTER_EXIT_S = 2.0
"""After the server exits, how long its stdout and stderr may stay open (held by processes it
started) before the tee kills its process group and stops reading."""

SWITCH_INTERVAL_S = 0.0002
"""The interpreter's thread switch interval in the tee: a pump waiting for the GIL gets it
within this time, which bounds the latency the recorder's work can add to a forwarded chunk."""

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
C2S, S2C, STDERR = "c2s", "s2c", "stderr"


class SpawnError(MCPTapError):
    """The server command could not be started (exit status 127 or 126, as a shell would)."""

    def __init__(self, message: str, exit_status: int):
        super().__init__(message)
        self.exit_status = exit_status


def _die_with_parent_fn():
    """A preexec function asking Linux to SIGKILL the server if the tee dies (even by SIGKILL),
    so the tee never leaves orphans. No-op where prctl is unavailable."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent:  # the tee died before prctl took effect
            os._exit(1)

    return preexec


def exit_status_of(returncode: int) -> int:
    """A shell's convention: the exit code, or 128+N when killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Tee:
    def __init__(self, argv: list[str], db_path: str, label: str | None = None, *, warn=warn_stderr):
        if not argv:
            raise MCPTapError("no server command given (usage: mcptap record [--db PATH] -- CMD [ARGS...])")
        self.argv = argv
        self.session = {
            "id": new_session_id(),
            "transport": "stdio",
            "label": label,
            "started_at": time.time(),
            "command": json.dumps(argv),
            "recorder": f"mcptap {__version__} record",
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        self.writer = SessionWriter(db_path, self.session, warn=warn)
        self._chunks: deque = deque()
        self._proc: subprocess.Popen | None = None
        self._sigint_seen = False
        self._escalation: threading.Timer | None = None

    @property
    def session_id(self) -> str:
        return self.session["id"]

    # -- running ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run the server to its end; returns the tee's exit status (the server's)."""
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0, process_group=0, preexec_fn=_die_with_parent_fn(),
            )
        except FileNotFoundError:
            raise SpawnError(f"cannot run {self.argv[0]!r}: no such file or directory", 127) from None
        except PermissionError:
            raise SpawnError(f"cannot run {self.argv[0]!r}: permission denied", 126) from None
        except OSError as exc:
            raise SpawnError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}", 126) from None
        proc = self._proc
        self.writer.start()
        previous = {s: signal.signal(s, self._on_signal) for s in FORWARDED_SIGNALS}
        recorder = _Recorder(self._chunks, self.writer, self.session_id)
        pumps = [
            self._start_pump(proc.stdout.fileno(), 1, S2C),
            self._start_pump(proc.stderr.fileno(), 2, STDERR),
        ]
        self._start_pump(0, proc.stdin.fileno(), C2S, on_eof=proc.stdin.close)
        recorder.start()
        try:
            returncode = proc.wait()
            self._drain(pumps)
        finally:
            if self._escalation is not None:
                self._escalation.cancel()
            for s, handler in previous.items():
                signal.signal(s, handler)
        status = exit_status_of(returncode)
        recorder.stop()
        self.writer.close(time.time(), status)
        return status

    def _start_pump(self, src: int, dst: int, stream: str, on_eof=None) -> threading.Thread:
        thread = threading.Thread(target=self._pump, args=(src, dst, stream, on_eof),
                                  name=f"mcptap-pump-{stream}", daemon=True)
        thread.start()
        return thread

    def _pump(self, src: int, dst: int, stream: str, on_eof) -> None:
        read, write, now, append = os.read, os.write, time.time, self._chunks.append
        backlog = self.writer.backlog
        produced, wait_for_room = backlog.produced, backlog.wait_for_room
        forwarding = True
        while True:
            if not wait_for_room(STALL_S):  # the store is behind: pace the wire, briefly
                self.writer.stalled()
            try:
                chunk = read(src, CHUNK_SIZE)
            except OSError:
                chunk = b""
            if not chunk:
                break
            append((stream, now(), chunk))  # queued before it is forwarded: causality in seq
            produced(stream, len(chunk))
            if forwarding:
                try:
                    written = write(dst, chunk)
                    if written != len(chunk):
                        view = memoryview(chunk)[written:]
                        while view:
                            view = view[write(dst, view):]
                except OSError:
                    forwarding = False  # the reader went away; keep reading so nothing blocks
        if on_eof is not None:
            try:
                on_eof()
            except OSError:
                pass

    def _drain(self, pumps: list[threading.Thread]) -> None:
        """Read the server's output to its end; kill its process group if others hold it open."""
        deadline = time.monotonic() + DRAIN_AFTER_EXIT_S
        for thread in pumps:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in pumps):
            self._kill_group()
            for thread in pumps:
                thread.join(1.0)

    # -- signals ---------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame) -> None:
        try:
            os.kill(self._proc.pid, signum)
        except ProcessLookupError:
            pass
        if signum == signal.SIGINT and not self._sigint_seen:
            self._sigint_seen = True
            return
        if self._escalation is None:
            self._escalation = threading.Timer(TERM_GRACE_S, self._kill_group)
            self._escalation.daemon = True
            self._escalation.start()

    def _kill_group(self) -> None:
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class _Recorder:
    """Cuts frames out of queued chunks off the wire and hands them to the writer."""

    def __init__(self, chunks: deque, writer: SessionWriter, session_id: str):
        self._sid = session_id
        self._chunks = chunks
        self._writer = writer
        self._framers = {C2S: LineFramer(), S2C: LineFramer(), STDERR: LineFramer()}
        self._last_ts = {C2S: 0.0, S2C: 0.0, STDERR: 0.0}
        self._seq = 0
        self._err_seq = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcptap-recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._drain()
        self._flush_tails()

    def _run(self) -> None:
        while not self._stop.wait(POLL_INTERVAL_S):
            self._drain()

    def _drain(self) -> None:
        """Rows for every line the queued chunks complete, in their final form (store rows)."""
        frames, errs, nbytes, drained = [], [], 0, 0
        popleft, framers, last_ts, sid = self._chunks.popleft, self._framers, self._last_ts, self._sid
        while True:
            try:
                stream, ts, chunk = popleft()
            except IndexError:
                break
            drained += len(chunk)
            last_ts[stream] = ts
            lines = framers[stream].feed(chunk)
            if not lines:
                continue
            if stream is STDERR:
                for line in lines:
                    self._err_seq += 1
                    errs.append((sid, self._err_seq, ts, stored_raw(line), 0))
                    nbytes += len(line) + 1
            else:
                seq = self._seq
                for line in lines:
                    seq += 1
                    size = len(line)
                    frames.append((sid, seq, ts, stream, stored_raw(line), size, 0))
                    nbytes += size + 1
                self._seq = seq
        self._writer.backlog.drained(drained, nbytes)
        if frames or errs:
            self._writer.add(frames, errs, nbytes)

    def _flush_tails(self) -> None:
        frames, errs, nbytes = [], [], 0
        tails = sorted((self._last_ts[s], s) for s in (C2S, S2C))
        for ts, stream in tails:
            tail = self._framers[stream].finish()
            if tail is not None:
                self._seq += 1
                frames.append((self._sid, self._seq, ts, stream, stored_raw(tail), len(tail), 1))
                nbytes += len(tail)
        tail = self._framers[STDERR].finish()
        if tail is not None:
            self._err_seq += 1
            errs.append((self._sid, self._err_seq, self._last_ts[STDERR], stored_raw(tail), 1))
            nbytes += len(tail)
        self._writer.backlog.drained(0, nbytes)
        if frames or errs:
            self._writer.add(frames, errs, nbytes)


def record(argv: list[str], db_path: str, label: str | None = None) -> int:
    """Run `argv` as an MCP server behind the tee, recording into `db_path`; its exit status."""
    return Tee(argv, db_path, label).run()
