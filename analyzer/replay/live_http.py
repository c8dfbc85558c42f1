"""The HTTP connections of `mcptap replay` to a live server (analyzer/replay/live.py has what
they share, and stdio): Streamable HTTP (a POST per frame, answers as JSON or an SSE stream, the
session id the server assigns, the 2026-07-28 headers) and legacy HTTP+SSE (one GET stream whose
`endpoint` event names where to POST)."""

from __future__ import annotations

import base64
import http.client
import re
import threading
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcptap.analysis import mcp
from mcptap.errors import MCPTapError
from mcptap.replay.live import CONNECT_TIMEOUT_S, Live, why

SSE_ACCEPT = "text/event-stream"
DRAIN_BYTES = 1 << 16
"""The most read of an answer that carries no frames (202, a DELETE's, a legacy POST's): the connection closes after."""


class HttpLive(Live):
    """What both HTTP transports share: the URL, connections, reading an answer's frames."""

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

        parser = SSEParser(self.max_frame)  # an event's data past --max-frame is kept cut, its size counted
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
            self._stream(response, lambda e: self._received(e.data, e.full_size) if e.data else None)
            return
        body = response.read(self.max_frame)  # a longer body is kept cut, the rest counted
        size = len(body)
        while chunk := response.read(1 << 16):
            size += len(chunk)
        if body.strip():
            self._received(body, size if size > len(body) else None)

    def _start_thread(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="mcptap-replay-http")
        self._threads.append(thread)
        thread.start()


class StreamableHttpLive(HttpLive):
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
        if self.protocol_version and header_safe(self.protocol_version) and "MCP-Protocol-Version" not in headers:
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
                response.read(DRAIN_BYTES)  # no frames here: the connection closes after a few bytes at most
                return
            self._frames_of(response)
        except (OSError, ValueError, http.client.HTTPException) as exc:  # ValueError: a header http.client refuses
            if not self._stopping.is_set():
                self._closed(f"POST {self.url} failed: {why(exc)}")
        finally:
            ready.set()
            conn.close()

    def close(self) -> int | None:
        self._stopping.set()
        if self.session_id:
            conn, target = self._connection(self.url, CONNECT_TIMEOUT_S)
            headers = {"Mcp-Session-Id": self.session_id}
            if self.protocol_version and header_safe(self.protocol_version):
                headers["MCP-Protocol-Version"] = self.protocol_version
            try:
                conn.request("DELETE", target, headers=headers)
                conn.getresponse().read(DRAIN_BYTES)
            except (OSError, ValueError, http.client.HTTPException):  # ValueError: a header value http.client refuses
                pass
            finally:
                conn.close()
        return None


class LegacySseLive(HttpLive):
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
                self._closed(f"GET {self.url} failed: {why(exc)}")
        finally:
            self._announced.set()

    def _event(self, event) -> None:
        if event.type == "endpoint" and event.data is not None and self.endpoint is None:
            self.endpoint = urljoin(self.url, event.data.decode("utf-8", "replace").strip())
            self._announced.set()
        elif event.type == "message" and event.data:
            self._received(event.data, event.full_size)

    def send(self, raw: bytes, message: Any = None) -> None:
        self._sent(raw)
        conn, target = self._connection(self.endpoint, CONNECT_TIMEOUT_S)
        try:
            conn.request("POST", target, body=raw, headers={"Content-Type": "application/json"})
            conn.getresponse().read(DRAIN_BYTES)
        except (OSError, http.client.HTTPException) as exc:
            self._closed(f"POST {self.endpoint} failed: {why(exc)}")
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
    headers = {"Mcp-Method": header_value(method)}
    if header_safe(version):  # a version no header can carry is not sent (the live server says what it lacks)
        headers["MCP-Protocol-Version"] = version
    name = params.get(NAME_BEARING.get(method, ""))
    if type(name) is str:
        headers["Mcp-Name"] = header_value(name)
    return headers


def header_safe(text: str) -> bool:
    """Whether `text` goes into a header as it is: printable ASCII, no space at either end, not
    the base64 sentinel's form."""
    return bool(_HEADER_SAFE.fullmatch(text)) and text == text.strip() and not text.startswith("=?base64?")


def header_value(text: str) -> str:
    """`text` as a header value: itself when header_safe, else in the `=?base64?...?=` sentinel
    (a recording's value may hold a line break or any character)."""
    return text if header_safe(text) else f"=?base64?{base64.b64encode(text.encode('utf-8', 'surrogatepass')).decode('ascii')}?="
