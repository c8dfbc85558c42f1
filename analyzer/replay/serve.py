"""`mcptap serve`: act as the server of a recorded session for a live client (a host under
test), over stdio (here) or Streamable HTTP (analyzer/replay/serve_http.py); what it answers is
analyzer/replay/responder.py."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Sequence

from mcptap.analysis.outstanding import Held, Outstanding
from mcptap.replay import script
from mcptap.replay.responder import (DEFAULT_MAX_BODY, INVALID_REQUEST, Faults, Recording, Reply, Responder,
                                     batch_answer, error_frame, parse_delays, read_frame)
from mcptap.wire.framing import LineFramer

__all__ = ["Faults", "parse_delays", "serve", "serve_stdio"]


def serve_stdio(responder: Responder, stdin: BinaryIO, stdout: BinaryIO, max_body: int = DEFAULT_MAX_BODY) -> int:
    """Answer frames from `stdin` on `stdout` until stdin ends; answers that wait (pacing,
    delay) are sent from threads of their own so that other requests are not held up, and a
    cancel from the client stops what was still to be sent for that request. A line longer than
    `max_body` is never held whole: it is answered with an Invalid Request error."""
    lock = threading.Lock()
    pending: list[threading.Thread] = []
    outstanding = Outstanding()

    def write(raw: bytes) -> None:
        with lock:
            try:
                stdout.write(raw + b"\n")
                stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass

    def send(reply: Reply, started: float, ident: Any, held: Held) -> None:
        try:
            for delay, raw in reply.frames:
                if not held.wait(started + delay - time.monotonic()):
                    return  # cancelled: nothing more for it
                write(raw)
        finally:
            outstanding.release(None, ident, held)

    for raw, size in _lines(stdin, max_body):
        if size is not None:
            write(error_frame(None, INVALID_REQUEST, f"Request too large: {size} bytes, more than the {max_body} "
                                                     "that mcptap serve --max-body allows"))
            continue
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        started = time.monotonic()
        incoming = read_frame(raw)
        if incoming.immediate is not None:
            write(incoming.immediate)
            continue
        for ident in incoming.cancelled:
            outstanding.cancel(None, ident)
        if incoming.batch:
            replies = [responder.reply(r) for r in incoming.requests]
            if any(r.answer is not None for r in replies):
                write(batch_answer(replies))
            continue
        for request in incoming.requests:
            reply = responder.reply(request)
            if any(delay > 0 for delay, _ in reply.frames):
                held = outstanding.hold(None, request.get("id"))
                thread = threading.Thread(target=send, args=(reply, started, request.get("id"), held), daemon=True)
                pending.append(thread)
                thread.start()
            else:
                for _, frame in reply.frames:
                    write(frame)
    for thread in pending:
        thread.join()
    return 0


def _lines(stdin: BinaryIO, limit: int):
    """(line, None) for each line of `stdin`, or (its first `limit` bytes, its full size) for a longer one."""
    framer = LineFramer(limit)
    read = getattr(stdin, "read1", stdin.read)
    while chunk := read(1 << 16):
        lines = framer.feed(chunk)
        cut = framer.cut or {}
        for i, line in enumerate(lines):
            yield line, cut.get(i)
    size = framer.size
    tail = framer.finish()
    if tail is not None:
        yield tail, size if size > len(tail) else None


def serve(db_path: str, ref: str, *, listen: str | None = None, faults: Faults | None = None,
          on_ready: Callable[[str], None] | None = None, allow_origins: Sequence[str] = (),
          max_body: int | None = None) -> int:
    """Load the session and serve it: on stdin/stdout, or on HTTP at `listen` ([HOST:]PORT),
    answering the Origins `allow_origins` names besides local ones (analyzer/origins.py) and
    reading client frames (HTTP bodies, stdio lines) up to `max_body` bytes (DEFAULT_MAX_BODY when None)."""
    from mcptap import store
    from mcptap.origins import parse_allowed
    from mcptap.proxy import parse_listen

    allow_origins = parse_allowed(allow_origins)  # a mistake is said before the database is read

    conn = store.open_existing(db_path)
    try:
        recorded = script.load(conn, ref)
    finally:
        conn.close()
    responder = Responder(Recording(recorded), faults)
    if listen is None:
        return serve_stdio(responder, sys.stdin.buffer, sys.stdout.buffer, max_body or DEFAULT_MAX_BODY)
    from mcptap.replay.serve_http import serve_http

    host, port = parse_listen(listen)
    return serve_http(responder, host, port, on_ready, allow_origins, max_body or DEFAULT_MAX_BODY)
