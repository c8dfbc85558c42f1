"""Client-side connections to a live MCP server, for `mcptap replay`: over stdio (a child
process), Streamable HTTP, or legacy HTTP+SSE. Each sends frames as they are given, puts every
frame the server sends into an inbox (a queue of `Inbound`) from reader threads, and records
both directions, byte for byte with their times, as one session (`Recording`).

Nothing here understands MCP beyond the transport: which headers to send and where answers
come back. The replay driver (analyzer/replay/__init__.py) decides what to send."""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcptap import store

from mcptap.analysis import mcp
from mcptap.errors import MCPTapError, warn_stderr
from mcptap.store.writer import SessionWriter

CONNECT_TIMEOUT_S = 10.0
STOP_GRACE_S = 2.0
SSE_ACCEPT = "text/event-stream"


@dataclass(frozen=True)
class Inbound:
    """What a reader thread saw: a frame from the server (`raw`), or the end of the connection
    (`closed`, saying why)."""

    ts: float
    raw: bytes | None = None
    closed: str | None = None


class Recording:
    """One session of the database, written as frames pass (analyzer/writer.SessionWriter: its
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

    def frame(self, direction: str, raw: bytes, ts: float | None = None) -> None:
        with self._lock:
            self._seq += 1
            row = store.frame_row(self.id, self._seq, time.time() if ts is None else ts, direction, raw, 0)
            if not self._redactor.off:
                row = store.redact_row(row, self._redactor)
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

    def _received(self, raw: bytes) -> None:
        ts = time.time()
        if self.recording is not None:
            self.recording.frame("s2c", raw, ts)
        self.inbox.put(Inbound(ts, raw=raw))

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
        for line in self.proc.stdout:
            self._received(line[:-1] if line.endswith(b"\n") else line)
        status = self.proc.wait()
        self._stderr_reader.join(1.0)  # its last words, for the message
        tail = f": {self.stderr_tail[-1]}" if self.stderr_tail else ""
        self._closed(f"the server exited with status {status}{tail}")

    def _read_stderr(self) -> None:
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


class _HttpBase(Live):
    def __init__(self, url: str, inbox, recording):
        super().__init__(inbox, recording)
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises on a port that is no number in 0..65535)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise MCPTapError(f"--url must be an http:// or https:// URL, not {url!r}")
        self.url = url
        self.describe = url
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    @staticmethod
    def _connection(url: str, timeout: float | None) -> tuple[http.client.HTTPConnection, str]:
        parts = urlsplit(url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname, parts.port, timeout=timeout)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return conn, target

    def _stream(self, response: http.client.HTTPResponse, on_event) -> None:
        """Read an event stream, calling `on_event(event)` for each event as it completes."""
        from mcptap.wire.sse import SSEParser

        parser = SSEParser()
        while not self._stopping.is_set():
            chunk = response.read1(65536)
            if not chunk:
                break
            for event in parser.feed(chunk):
                on_event(event)

    def _frames_of(self, response: http.client.HTTPResponse) -> None:
        """The frames an answer to a POST carries: a JSON body, or the data of each SSE event."""
        ctype = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if ctype == SSE_ACCEPT:
            self._stream(response, lambda e: self._received(e.data) if e.data else None)
            return
        body = response.read()
        if body.strip():
            self._received(body)

    def _start_thread(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="mcptap-replay-http")
        self._threads.append(thread)
        thread.start()


class StreamableHttpLive(_HttpBase):
    """Streamable HTTP (2025-03-26 on): each frame is a POST; its answer is JSON or an event
    stream. The Mcp-Session-Id the server assigns is sent back; the protocol version header is
    sent once known. `send` returns when the answer's headers are in, so frames reach the server
    in order; the answer's body is read by a thread of its own."""

    transport = "http"

    def __init__(self, url: str, inbox, recording, *, timeout: float):
        super().__init__(url, inbox, recording)
        self.timeout = timeout
        self.session_id: str | None = None

    def start(self) -> None:
        pass

    def send(self, raw: bytes, message: Any = None) -> None:
        headers = {"Content-Type": "application/json", "Accept": f"application/json, {SSE_ACCEPT}"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        headers.update(stateless_headers(message))
        if self.protocol_version and "MCP-Protocol-Version" not in headers:
            headers["MCP-Protocol-Version"] = self.protocol_version
        self._sent(raw)
        ready = threading.Event()
        self._start_thread(self._post, raw, headers, ready)
        ready.wait(self.timeout)

    def _post(self, raw: bytes, headers: dict, ready: threading.Event) -> None:
        conn, target = self._connection(self.url, CONNECT_TIMEOUT_S)
        try:
            conn.request("POST", target, body=raw, headers=headers)
            conn.sock.settimeout(None)  # an event stream may stay quiet for long
            response = conn.getresponse()
            assigned = response.getheader("Mcp-Session-Id")
            if assigned and not self.session_id:
                self.session_id = assigned
            ready.set()
            if response.status in (202, 204):
                response.read()
                return
            self._frames_of(response)
        except (OSError, http.client.HTTPException) as exc:
            if not self._stopping.is_set():
                self._closed(f"POST {self.url} failed: {_why(exc)}")
        finally:
            ready.set()
            conn.close()

    def close(self) -> int | None:
        self._stopping.set()
        if self.session_id:
            conn, target = self._connection(self.url, CONNECT_TIMEOUT_S)
            headers = {"Mcp-Session-Id": self.session_id}
            if self.protocol_version:
                headers["MCP-Protocol-Version"] = self.protocol_version
            try:
                conn.request("DELETE", target, headers=headers)
                conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
        return None


class LegacySseLive(_HttpBase):
    """HTTP+SSE (2024-11-05): a GET event stream announces the endpoint to POST frames to, and
    carries every frame of the server's."""

    transport = "sse"

    def __init__(self, url: str, inbox, recording, *, timeout: float):
        super().__init__(url, inbox, recording)
        self.timeout = timeout
        self.endpoint: str | None = None
        self._announced = threading.Event()
        self._get: http.client.HTTPConnection | None = None

    def start(self) -> None:
        self._start_thread(self._listen)
        if not self._announced.wait(self.timeout):
            raise MCPTapError(f"{self.url} announced no endpoint within {self.timeout:g} s")
        if self.endpoint is None:
            raise MCPTapError(f"{self.url} is not a legacy HTTP+SSE endpoint (no `endpoint` event)")

    def _listen(self) -> None:
        conn, target = self._connection(self.url, CONNECT_TIMEOUT_S)
        self._get = conn
        try:
            conn.request("GET", target, headers={"Accept": SSE_ACCEPT})
            conn.sock.settimeout(None)
            response = conn.getresponse()
            if response.status != 200:
                self._announced.set()
                return
            self._stream(response, self._event)
            if not self._stopping.is_set():
                self._closed(f"the server closed the event stream of {self.url}")
        except (OSError, http.client.HTTPException) as exc:
            if not self._stopping.is_set():
                self._closed(f"GET {self.url} failed: {_why(exc)}")
        finally:
            self._announced.set()

    def _event(self, event) -> None:
        if event.type == "endpoint" and event.data is not None and self.endpoint is None:
            self.endpoint = urljoin(self.url, event.data.decode("utf-8", "replace").strip())
            self._announced.set()
        elif event.type == "message" and event.data:
            self._received(event.data)

    def send(self, raw: bytes, message: Any = None) -> None:
        self._sent(raw)
        conn, target = self._connection(self.endpoint, CONNECT_TIMEOUT_S)
        try:
            conn.request("POST", target, body=raw, headers={"Content-Type": "application/json"})
            conn.getresponse().read()
        except (OSError, http.client.HTTPException) as exc:
            self._closed(f"POST {self.endpoint} failed: {_why(exc)}")
        finally:
            conn.close()

    def close(self) -> int | None:
        self._stopping.set()
        if self._get is not None and self._get.sock is not None:
            try:
                self._get.sock.shutdown(2)
            except OSError:
                pass
        return None


NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""2026-07-28: the methods whose `Mcp-Name` header mirrors a param (docs/mcp-reference.md, HTTP)."""
_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")


def stateless_headers(message: Any) -> dict[str, str]:
    """The headers a 2026-07-28 request carries on HTTP (its `_meta` names that revision):
    `MCP-Protocol-Version` matching `_meta`, `Mcp-Method`, and `Mcp-Name` for the methods that
    name something (a value unsafe in a header goes in the `=?base64?...?=` sentinel)."""
    if type(message) is not dict:
        return {}
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    version = meta.get(mcp.META_PROTOCOL_VERSION) if type(meta) is dict else None
    method = message.get("method")
    if type(version) is not str or type(method) is not str:
        return {}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name = params.get(NAME_BEARING.get(method, ""))
    if type(name) is str:
        safe = _HEADER_SAFE.fullmatch(name) and name == name.strip() and not name.startswith("=?base64?")
        headers["Mcp-Name"] = name if safe else f"=?base64?{base64.b64encode(name.encode()).decode('ascii')}?="
    return headers


def _why(exc: BaseException) -> str:
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
