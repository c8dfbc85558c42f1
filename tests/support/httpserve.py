"""A real HTTP server (Python's http.server) on 127.0.0.1, any free port, serving from a thread
for the length of a `with`: the tests' stand-in upstreams and collectors, each a handler class
that says how it answers. For a server that must break HTTP on purpose, tests/support/rawhttp.py."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JOIN_S = 10


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that logs nothing (http.server writes each request to stderr otherwise)."""

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler] | None) -> Iterator[ThreadingHTTPServer]:
    """The server, answering with `handler` (None: set `RequestHandlerClass` before the first
    request, for a handler that needs the server's owner), until the block ends; then shut down,
    closed and its thread joined."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(JOIN_S)


def url(server: ThreadingHTTPServer, path: str = "") -> str:
    """The server's base URL (http://127.0.0.1:PORT), then `path`."""
    return f"http://127.0.0.1:{server.server_address[1]}{path}"
