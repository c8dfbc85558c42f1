"""`mcptap record`: a stdio tee in front of an MCP server (spec: MCP stdio transport, see
docs/mcp-reference.md section 8.1).

The wire comes first. Three pump threads move bytes host->server (stdin), server->host (stdout)
and server stderr->host stderr with blocking reads and writes, chunk by chunk as they arrive,
unchanged. Before forwarding a chunk a pump puts (stream, time, chunk) on a ChunkQueue
(addons/shipping/chunkqueue.py): that is the whole cost of recording on the wire, and it never waits for
the database (past a bound in memory the queue overflows to disk). A shipper thread wakes every
SHIP_INTERVAL_S and writes what was queued to the recorder process (addons/stdio/recorder.py,
started once the server's first answer has passed: RECORDER_AFTER_S), which cuts frames and
stores them: framing and SQLite run under another interpreter lock than the pumps'. The tee never writes to stdout itself; its own messages go to stderr, and only when
something is wrong."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from mcptap import __version__
from mcptap.errors import MCPTapError, warn_stderr
from mcptap.ids import new_session_id
from mcptap.addons.shipping.background import hurry, recorder_env, wait_hurried
from mcptap.addons.shipping.chunkqueue import ChunkQueue
from mcptap.addons.shipping.chunkwire import END, SESSION, chunk_header, json_record
from mcptap.addons import runs
from mcptap.addons.stdio.server import spawn

CHUNK_SIZE = 1 << 16
"""Largest read per system call: a pipe's default capacity, so a pipe never has more to hand
over. (Asking for more costs: glibc serves a read buffer above 128 KiB from mmap, an mmap and
munmap per read, measured at +25 us per chunk in bench/tee.py.)"""

SHIP_INTERVAL_S = 0.05
"""How often the shipper hands what passed to the recorder process: it is never woken per chunk,
only at this interval or when a flood has queued chunkqueue.WAKE_BYTES. Each wake-up costs the
wire a little latency (measured in bench/tee.py: 50 ms halves the p99 added at 10 ms)."""

RECORDER_AFTER_S = 0.5
"""The recorder process starts once the server's first answer has passed, or at the latest this
long after the server: a host waits for that answer, and a Python process starting beside the
server's own start (its imports, SQLite) would take the CPU the server boots on. What passes
before waits in the queue, in order."""

SHIP_BYTES = 1 << 20
"""Chunk bytes the shipper takes off the queue per write to the recorder process."""

IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024
"""Most buffers one writev() takes."""

RECORDER_PIPE_BYTES = 1 << 20
"""Capacity asked for the pipe to the recorder process (Linux F_SETPIPE_SZ; best effort)."""

TERM_GRACE_S = 5.0
"""After forwarding SIGTERM or SIGHUP (or a second SIGINT), how long the server has to exit
before the tee sends SIGKILL to its process group."""

DRAIN_AFTER_EXIT_S = 2.0
"""After the server exits, how long its stdout and stderr may stay open (held by processes it
started) before the tee kills its process group and stops reading."""

SWITCH_INTERVAL_S = 0.0002
"""The interpreter's thread switch interval in the tee: a pump waiting for the GIL gets it
within this time, which bounds the latency the shipper's work can add to a forwarded chunk
(framing and SQLite run in the recorder process, under a lock of their own)."""

WAIT_TICK_S = 1.0
"""The longest the tee's main thread sleeps while it waits for the server: a forwarded signal's
handler runs on the main thread, and a signal that comes just before a blocking wait (or to
another thread) does not end that wait; at the next tick the handler runs."""


FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
C2S, S2C, STDERR = "c2s", "s2c", "stderr"


def _close_stdout() -> None:
    """The server's stdout ended: end the host's too, now, not when the recording is stored
    (/dev/null takes fd 1's place, so the number is never reused for something else)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def exit_status_of(returncode: int) -> int:
    """A shell's convention: the exit code, or 128+N when killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def wait_for_exit(proc: subprocess.Popen) -> int:
    """`proc.wait()`, woken at its exit (a pidfd) and at least every WAIT_TICK_S, so that a signal
    handler never waits on the server's exit for it to run."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: a poll of the exit each tick instead
        fd = None
    try:
        while proc.poll() is None:
            if fd is None:
                time.sleep(WAIT_TICK_S)
            else:
                select.select([fd], [], [], WAIT_TICK_S)
    finally:
        if fd is not None:
            os.close(fd)
    return proc.returncode


class Tee:
    def __init__(self, argv: list[str], db_path: str, label: str | None = None, *, warn=warn_stderr,
                 redaction_args: list[str] | None = None, max_frame: int | None = None,
                 server: subprocess.Popen | None = None, host_app: str | None = None,
                 recorder: tuple[tuple[str, ...], dict] | None = None):
        """`server`: `argv` already started by addons/stdio/server.py `spawn` (mcptap record starts it
        before importing this module); else run() starts it. `host_app`: the name of the application
        that starts it (`--host-app`, which mcptap wrap writes), recorded with the host process.
        `recorder`: (words after `python -m`, environment added) of the recorder process in place of
        addons/stdio/recorder.py (one that runs it with more, as the live telemetry does)."""
        if not argv:
            raise MCPTapError("no server command given (usage: mcptap record [--db PATH] -- CMD [ARGS...])")
        self.argv = argv
        self._server = server
        host = runs.host_process()
        self.session = {
            "id": new_session_id(),
            "transport": "stdio",
            "label": label,
            "started_at": time.time(),
            "command": json.dumps(argv),
            "recorder": f"mcptap {__version__} record",
            "host": os.uname().nodename,  # socket.gethostname(), without importing socket
            "pid": os.getpid(),
            "run": runs.stdio_run(os.uname().nodename, host),
            "client": runs.stdio_client(host, host_app),
        }
        self.db_path = db_path
        self._warn = warn
        self._redaction_args = redaction_args or []  # for the recorder process (analyzer/redaction/__init__.py Redaction.to_args)
        # a longer line is stored cut (None: the recorder's default, analyzer/wire/bounded.py DEFAULT_MAX_FRAME); the
        # wire passes it whole
        self._max_frame = max_frame
        self._recorder = recorder or (("mcptap.addons.stdio.recorder",), {})
        db_folder = os.path.dirname(os.path.abspath(db_path))
        self._queue = ChunkQueue((db_folder, None))  # None: the system's temporary folder
        self._proc: subprocess.Popen | None = None
        self._sigint_seen = False
        self._server_gone = threading.Event()
        self._answered = threading.Event()  # the server's first output has passed to the host
        self._escalation: threading.Timer | None = None

    @property
    def session_id(self) -> str:
        return self.session["id"]

    # -- running ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run the server to its end; returns the tee's exit status (the server's)."""
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        proc = self._proc = self._server or spawn(self.argv)
        previous = {s: signal.signal(s, self._on_signal) for s in FORWARDED_SIGNALS}
        self._start_pump(0, proc.stdin.fileno(), C2S, on_eof=proc.stdin.close)  # first: the host is waiting
        pumps = [
            self._start_pump(proc.stdout.fileno(), 1, S2C, on_eof=_close_stdout),
            self._start_pump(proc.stderr.fileno(), 2, STDERR),
        ]
        # the recorder process after the server's first answer (what passes meanwhile waits in the queue, in order)
        shipper = _Shipper(self._queue, self._start_recorder, self.session, self._warn, self._answered)
        shipper.start()
        try:
            returncode = wait_for_exit(proc)
            self._server_gone.set()  # what the host writes from now on reaches no server: not recorded
            self._drain(pumps)
        finally:
            if self._escalation is not None:
                self._escalation.cancel()
            for s, handler in previous.items():
                signal.signal(s, handler)
        status = exit_status_of(returncode)
        shipper.finish({"ended_at": time.time(), "exit_status": status})
        self._queue.close()
        return status

    def _start_recorder(self) -> subprocess.Popen | None:
        """The recorder process: this interpreter running mcptap.addons.stdio.recorder from this very
        package (-P and PYTHONPATH: never an `mcptap` that happens to be in the working folder).
        In its own process group, so that a Ctrl-C at a terminal reaches only the tee, which
        ends the recording in order. None (and a warning) if it cannot be started."""
        words, added = self._recorder
        env = {**recorder_env(), **added}
        try:
            recorder = subprocess.Popen(
                [sys.executable, "-P", "-m", *words, self.db_path,
                 *(("--max-frame", str(self._max_frame)) if self._max_frame is not None else ()), *self._redaction_args],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, bufsize=0, env=env, process_group=0,
            )
        except OSError as exc:
            self._warn(f"cannot start the recorder process ({exc.strerror or exc}): session "
                       f"{self.session_id} passes through unrecorded")
            return None
        try:
            fcntl.fcntl(recorder.stdin.fileno(), fcntl.F_SETPIPE_SZ, RECORDER_PIPE_BYTES)
        except (OSError, AttributeError):
            pass
        return recorder

    def _start_pump(self, src: int, dst: int, stream: str, on_eof=None) -> threading.Thread:
        thread = threading.Thread(target=self._pump, args=(src, dst, stream, on_eof),
                                  name=f"mcptap-pump-{stream}", daemon=True)
        thread.start()
        return thread

    def _pump(self, src: int, dst: int, stream: str, on_eof) -> None:
        read, write, now, put = os.read, os.write, time.time, self._queue.put
        gone = self._server_gone if stream == C2S else None
        first = self._answered if stream == S2C else None
        forwarding = True
        while True:
            try:
                chunk = read(src, CHUNK_SIZE)
            except OSError:
                chunk = b""
            if not chunk or (gone is not None and gone.is_set()):
                break
            put(stream, now(), chunk)  # queued before it is forwarded: causality in seq
            if forwarding:
                try:
                    written = write(dst, chunk)
                    if written != len(chunk):
                        view = memoryview(chunk)[written:]
                        while view:
                            view = view[write(dst, view):]
                except OSError:
                    forwarding = False  # the reader went away; keep reading so nothing blocks
            if first is not None:
                first.set()
                first = None
        if first is not None:
            first.set()
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


class _Shipper:
    """Moves queued chunks to the recorder process, off the wire, in the order they passed."""

    def __init__(self, queue: ChunkQueue, start_recorder, session: dict, warn, ready: threading.Event):
        """`start_recorder()`: the recorder process (or None), called by the shipper's thread once
        `ready` is set (the server answered) or RECORDER_AFTER_S has passed."""
        self._queue = queue
        self._start_recorder = start_recorder
        self._ready = ready
        self._recorder: subprocess.Popen | None = None
        self._fd: int | None = None
        self._session = session
        self._session_id = session["id"]
        self._warn = warn
        self._lost = 0  # chunk bytes that could not be handed to the recorder process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcptap-shipper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self, end: dict) -> None:
        """Ship the rest and the session's end, then wait for the recorder to store it all."""
        self._stop.set()
        self._ready.set()  # a server that ended before it answered: its recorder now
        self._queue.wake()
        self._thread.join()
        if self._recorder is not None:
            hurry(self._recorder.pid)
        self._ship_all()
        self._send([json_record(END, end)])
        if self._recorder is None:
            return
        try:
            self._recorder.stdin.close()
        except OSError:
            pass
        status = wait_hurried(self._recorder)
        lost = self._lost + self._queue.unreadable
        if status != 0 or lost:
            self._warn(f"the recorder process of session {self._session_id} ended early (status "
                       f"{exit_status_of(status)}): the session lacks what it had not stored, and "
                       f"{lost} bytes that passed after it ended")

    def _run(self) -> None:
        self._ready.wait(RECORDER_AFTER_S)
        self._recorder = self._start_recorder()
        self._fd = self._recorder.stdin.fileno() if self._recorder is not None else None
        self._send([json_record(SESSION, self._session)])
        while not self._stop.is_set():
            self._queue.wait(SHIP_INTERVAL_S)
            self._ship_all()

    def _ship_all(self) -> None:
        take = self._queue.take
        while chunks := take(SHIP_BYTES):
            buffers = []
            for stream, ts, chunk in chunks:
                buffers += (chunk_header(stream, ts, len(chunk)), chunk)
            self._send(buffers)

    def _send(self, buffers: list[bytes]) -> None:
        """Write whole buffers (blocking: a full pipe means the recorder is behind, and the
        queue, not the wire, takes up the slack)."""
        if self._fd is None:
            self._lost += sum(map(len, buffers))
            return
        first = 0
        try:
            while first < len(buffers):
                written = os.writev(self._fd, buffers[first:first + IOV_MAX])
                while first < len(buffers) and written >= len(buffers[first]):
                    written -= len(buffers[first])
                    first += 1
                if written:
                    buffers[first] = buffers[first][written:]
        except OSError:  # the recorder process is gone: count what it missed, keep the wire going
            self._fd = None
            self._lost += sum(map(len, buffers[first:]))


def record(argv: list[str], db_path: str, label: str | None = None) -> int:
    """Run `argv` as an MCP server behind the tee, recording into `db_path`; its exit status."""
    return Tee(argv, db_path, label).run()
