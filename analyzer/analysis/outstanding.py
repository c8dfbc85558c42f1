"""Live requests a served recording is still busy with (frames still to send, or an answer never
to come), ended by the client's `notifications/cancelled`, the client closing its connection, its
session's end or the server's stop (cancellation: MCP basic/utilities/cancellation)."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from typing import Any

from mcptap.analysis.messages import id_key


class Held:
    """A live request serve is still busy with (frames still to send, or an answer never to come):
    `end()` (its cancel, its session's end, the server's stop) wakes whoever waits on it."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self._lock = threading.Lock()
        self._wake: tuple[socket.socket, socket.socket] | None = None

    def end(self) -> None:
        with self._lock:
            self.ended.set()
            if self._wake is not None:
                with contextlib.suppress(OSError):
                    self._wake[1].send(b"\0")

    def wait(self, seconds: float | None, peer: socket.socket | None = None) -> bool:
        """Wait `seconds` (None: for ever): True when the time came, False when the request ended
        first, or the client closed `peer`, its connection."""
        if peer is None:
            return not self.ended.wait(seconds)
        deadline = None if seconds is None else time.monotonic() + seconds
        with self._lock:
            if self._wake is None:
                self._wake = socket.socketpair()
            wake = self._wake[0]
        with selectors.DefaultSelector() as selector:
            selector.register(wake, selectors.EVENT_READ)
            selector.register(peer, selectors.EVENT_READ)
            while not self.ended.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return True
                for key, _ in selector.select(left):
                    if key.fileobj is peer:
                        if _closed(peer):
                            return False
                        selector.unregister(peer)  # it sent more (pipelining): no sign of its going any more
        return False

    def close(self) -> None:
        with self._lock:
            for sock in self._wake or ():
                sock.close()
            self._wake = None


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


class Outstanding:
    """The live requests serve is still busy with, by (session, id): the client's cancel ends
    one, a session's end its own, the server's stop all of them (and any held after)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple, Held] = {}
        self._stopped = False

    def hold(self, session: str | None, ident: Any) -> Held:
        held = Held()
        with self._lock:
            if self._stopped:
                held.end()
            else:
                self._held[(session, id_key(ident))] = held
        return held

    def release(self, session: str | None, ident: Any, held: Held) -> None:
        key = (session, id_key(ident))
        with self._lock:
            if self._held.get(key) is held:
                del self._held[key]
        held.close()

    def cancel(self, session: str | None, ident: Any) -> None:
        with self._lock:
            held = self._held.pop((session, id_key(ident)), None)
        if held is not None:
            held.end()

    def end(self, session: str | None = None, *, stop: bool = False) -> None:
        """End a session's requests, or with `stop` every request, now and later."""
        with self._lock:
            self._stopped = self._stopped or stop
            keys = [k for k in self._held if stop or k[0] == session]
            ended = [self._held.pop(k) for k in keys]
        for held in ended:
            held.end()
