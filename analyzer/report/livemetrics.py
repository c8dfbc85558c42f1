"""`mcptap proxy --metrics-listen`: Prometheus /metrics of what the proxy records, as it records it,
under the names `mcptap view` serves (analyzer/report/metrics.py). Counted as it goes: each scrape
reads the frames the proxy's sessions stored since the last one, SCRAPE_ROWS at a time for at most
SCRAPE_SECONDS (the rest at the next scrape), never the whole database, and adds them to its
running counts; a request
waits (at most PENDING_MAX of them) for its answer, which puts its latency in the histogram. The
proxy analyses nothing as it runs: the findings family is there, without samples (`mcptap view`
over the same database counts them once `mcptap analyze` has stored them). Served on a loopback
address only, to a Host naming a loopback address (a page of a site that renamed itself to
127.0.0.1 reads nothing)."""

from __future__ import annotations

import bisect
import ipaddress
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcptap.report import metrics
from mcptap.store import metricreads
from mcptap.store.connections import open_existing

SCRAPE_ROWS = 5_000
"""Rows of the frames table read at a time (about 50 ms of SQLite reading small frames' JSON)."""
SCRAPE_SECONDS = 0.5
"""A scrape reads no more batches after this: its work is bounded whatever the proxy recorded since."""
PENDING_MAX = 100_000
"""The most requests waiting for their answer; past it the oldest is forgotten (never answered)."""


class LiveMetrics:
    """Running counts of the frames one recorder (its `recorder` name and process id) stores into
    `db` from now on."""

    def __init__(self, db: str, *, recorder: str, pid: int) -> None:
        self.conn = open_existing(db)
        self.recorder, self.pid = recorder, pid
        self.mark = self.last = metricreads.last_frame(self.conn)  # counted up to; stored up to, when last asked
        self.frames: dict[tuple[str, str], list[int]] = {}  # (server, direction) -> [frames, bytes]
        self.latency: dict[tuple[str, str, int], list] = {}  # (server, method, bucket) -> [requests, seconds]
        self.pending: dict[tuple, tuple[float, str]] = {}  # (session, direction, id type, id) -> (ts, method)
        self.lock = threading.Lock()

    def catch_up(self) -> int:
        """Count the next SCRAPE_ROWS rows of the frames table (at most); how many frames of ours were there."""
        self.last = metricreads.last_frame(self.conn)
        upto = min(self.last, self.mark + SCRAPE_ROWS)
        rows = metricreads.frames_after(self.conn, self.mark, upto, recorder=self.recorder, pid=self.pid)
        self.mark = upto
        for server, session, direction, size, ts, method, id_type, id_value, answer in rows:
            counts = self.frames.setdefault((server, direction), [0, 0])
            counts[0] += 1
            counts[1] += size
            if id_type in (None, "null", "object", "array", "true", "false"):
                continue
            if isinstance(method, str) and not answer:
                self._wait(("c2s" if direction == "s2c" else "s2c", session, id_type, id_value), ts, method)
            elif answer and method is None:
                asked = self.pending.pop((direction, session, id_type, id_value), None)
                if asked is not None:
                    seconds = max(ts - asked[0], 0.0)
                    cell = self.latency.setdefault((server, asked[1], bisect.bisect_left(metrics.BOUNDS, seconds)),
                                                   [0, 0.0])
                    cell[0] += 1
                    cell[1] += seconds
        return len(rows)

    def _wait(self, key: tuple, ts: float, method: str) -> None:
        if len(self.pending) >= PENDING_MAX:
            del self.pending[next(iter(self.pending))]
        self.pending[key] = (ts, method)

    def families(self) -> list:
        with self.lock:
            until = time.monotonic() + SCRAPE_SECONDS
            while True:
                self.catch_up()
                if self.mark >= self.last or time.monotonic() >= until:
                    break
            return metrics.families([(s, d, n, b) for (s, d), (n, b) in sorted(self.frames.items())], [],
                                    [(s, m, k, n, t) for (s, m, k), (n, t) in sorted(self.latency.items())])

    def exposition(self) -> tuple[bytes, str]:
        return metrics.text(self.families)

    def close(self) -> None:
        self.conn.close()


def _loopback_host(value: str | None) -> bool:
    """A Host header naming a loopback address (or localhost), with or without a port."""
    if not value:
        return False
    host = value.rsplit("]", 1)[0].lstrip("[") if value.startswith("[") else value.rsplit(":", 1)[0]
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MetricsServer:
    """/metrics on a loopback (host, port), in a thread of its own: `start()`, then `address`,
    `stop()`."""

    def __init__(self, live: LiveMetrics, host: str, port: int) -> None:
        self.live = live

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not _loopback_host(self.headers.get("Host")):
                    self._answer(403, b"a loopback Host only\n", "text/plain; charset=utf-8")
                elif self.path.partition("?")[0] != "/metrics":
                    self._answer(404, b"/metrics only\n", "text/plain; charset=utf-8")
                else:
                    self._answer(200, *live.exposition())

            def _answer(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:  # the proxy's terminal is the user's
                pass

        family = ThreadingHTTPServer.address_family
        if ":" in host:
            import socket

            family = socket.AF_INET6

        class Server(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

        self.server = Server((host, port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="mcptap-metrics", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return self.server.server_address[:2]

    def start(self, say: Callable[[str, int], None] | None = None) -> None:
        self.thread.start()
        if say is not None:
            say(*self.address)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
        self.live.close()
