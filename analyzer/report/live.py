"""`mcptap view`: the viewer of the HTML report served live over a database of any size (Starlette
on uvicorn, on a loopback address): the same page (viewer.html and its scripts), whose script asks
the server for what it shows, page by page (analyzer/report/livedata.py), instead of reading a
document embedded in it. The database is opened read-only. Every request is refused unless its
Host and Origin are local ones (analyzer/origins.py, as `mcptap serve` checks them: 421, 403) and
it carries the token printed in the URL (403), unless the server was started without one. A number
in a request's query is a 64-bit integer or a finite decimal, else 400; a connection that has not
sent a whole request within REQUEST_TIMEOUT_S of opening (or of its last answer) is closed."""

from __future__ import annotations

import math
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from urllib.parse import parse_qs

from mcptap import __version__, origins
from mcptap.errors import MCPTapError
from mcptap.origins import ListenerPolicy
from mcptap.report import audit, livedata, liveruns
from mcptap.store import filterlang, viewpages

DEFAULT_PORT = 8810
TOKEN_HEADER = "x-mcptap-token"
REQUEST_TIMEOUT_S = 5  # to send a whole request (its line and headers), from the connection's start or last answer
KEEP_ALIVE_S = 5  # an idle connection between requests
HEADER_BYTES = 65_536  # a request's line and headers, at most
_INTEGER = re.compile(r"-?[0-9]{1,19}")
_DECIMAL = re.compile(r"-?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?")
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY"}


def parse_listen(listen: str | None) -> tuple[str, int]:
    """`[HOST:]PORT` -> (host, port), a loopback host only (default 127.0.0.1:8810)."""
    return origins.parse_listen(listen, DEFAULT_PORT, loopback_only="mcptap view")


class Guard:
    """ASGI middleware: a request with a foreign Host or Origin gets its refusal, one without the
    token 403; the others go on to the app."""

    def __init__(self, app, policy: ListenerPolicy, token: str | None):
        self.app, self.policy, self.token = app, policy, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.responses import Response

        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        refusal = self.policy.check([v for k, v in headers if k == "host"], [v for k, v in headers if k == "origin"])
        if refusal is not None:
            return await Response(refusal.body, refusal.status, media_type="application/json",
                                  headers=HEADERS)(scope, receive, send)
        if self.token is not None:
            given = [v for k, v in headers if k == TOKEN_HEADER]
            given += parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
            if len(given) != 1 or not secrets.compare_digest(given[0].encode(), self.token.encode()):
                return await Response(b'{"error":"Forbidden: the token of the URL mcptap view printed is needed"}',
                                      403, media_type="application/json", headers=HEADERS)(scope, receive, send)
        return await self.app(scope, receive, send)


class Page:
    """The page: viewer.html in its live form, rendered again when the database changed."""

    def __init__(self, view: livedata.LiveView, token: str | None):
        self.view, self.token = view, token
        self._key, self._html, self._csp = None, b"", ""
        self._lock = threading.Lock()
        self._latency: list | None = None  # the latency table, worked out in a thread (a million frames: seconds)
        self._latency_for: int | None = None
        self._working = False

    def html(self) -> tuple[bytes, str]:
        self.view.refresh()
        with self._lock:
            if self._latency_for != self.view.changes and not self._working:
                self._working = True
                threading.Thread(target=self._work_out_latency, args=(self.view.changes,), daemon=True).start()
            key = (self.view.changes, self._latency_for)
            if key != self._key:
                self._html, self._csp = self._render()
                self._key = key
            return self._html, self._csp

    def _work_out_latency(self, changes: int) -> None:
        from mcptap.report import html as report_html

        try:
            rows = report_html._latency(self.view.db, None) if self.view.sessions else []
        except Exception:  # noqa: BLE001 - a database changing under it: the next page asks again
            rows = None
        with self._lock:
            self._working = False
            if rows is not None:
                self._latency, self._latency_for = rows, changes

    def _render(self) -> tuple[bytes, str]:
        from mcptap.report import html as report_html

        summary = self.view.summary()
        script, style = report_html.script_text(), report_html._asset("viewer.css")
        csp = (f"default-src 'none'; script-src {report_html._csp_hash(script)}; "
               f"style-src {report_html._csp_hash(style)}; img-src data:; connect-src 'self'")
        ids = [s["id"] for s in summary["sessions"]]
        config = {"token": self.token, "db": self.view.db, "version": __version__,
                  "latency": self._latency or [],
                  "codes": report_html.viewdata._codes(), "kinds": report_html.viewdata.KINDS,
                  "directions": report_html.viewdata.DIRECTIONS, "severities": report_html.viewdata.SEVERITIES,
                  "summary": summary}
        payload = livedata.dumps(config)
        for char, escape in report_html._SAFE_JSON.items():
            payload = payload.replace(char, escape)
        sessions = [{**s, "duration_s": ((s["ended_at"] or (s["started_at"] + s["t1"])) - s["started_at"])}
                    for s in summary["sessions"]]
        rank = {"error": 0, "warning": 1, "info": 2}
        by_code = sorted(({"severity": sev, "code": code, "count": n}
                          for sev, code, n in viewpages.findings_by_code(self.view.conn())),
                         key=lambda c: (rank.get(c["severity"], 3), -c["count"], c["code"]))
        secure = [code for code, c in config["codes"].items() if c["group"] == audit.GROUP]
        found, total = viewpages.findings_with_codes(self.view.conn(), secure, audit.SECTION_ROWS)
        security = ([audit.section_row(*row) for row in found], total)
        page = report_html._ENV.from_string(report_html._asset("viewer.html")).render(
            db=self.view.db, version=__version__, script=script, style=style, payload="", csp=csp,
            sessions=sessions[:report_html.MAX_LISTED], total_sessions=len(sessions), viewed=len(sessions),
            frames=summary["total"], latency=config["latency"], left_out={}, by_code=by_code, in_db=summary["total"],
            max_frames=0, near=0, ends=0, view_command="", exchanges=[], live=payload.decode("utf-8"), security=security,
            runs=report_html._run_rows(summary["runs"], summary["sessions"]), run=None,
            latency_pending=self._latency is None and bool(ids))
        return page.encode("utf-8"), csp


def query_number(name: str, value: str, kind=int):
    """A query's number as `kind` (int: a 64-bit integer, as SQLite takes it; float: a finite
    decimal); ValueError (a 400) for anything else."""
    if kind is int:
        if _INTEGER.fullmatch(value) and -2 ** 63 <= int(value) < 2 ** 63:
            return int(value)
        raise ValueError(f"{name} is not an integer of 64 bits")
    if _DECIMAL.fullmatch(value) and math.isfinite(float(value)):
        return float(value)
    raise ValueError(f"{name} is not a finite decimal number")


def _protocol():
    """uvicorn's h11 protocol with a deadline for each request: a connection is closed when it has
    not sent a whole request (line and headers) within REQUEST_TIMEOUT_S of opening or of its last
    answer, however slowly it trickles bytes (uvicorn's keep-alive timeout alone starts only after
    an answer, and each byte received stops it)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineProtocol(H11Protocol):
        deadline = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self.deadline = self.loop.call_later(REQUEST_TIMEOUT_S, self._too_slow)

        def _disarm(self) -> None:
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

        def _too_slow(self) -> None:
            self.deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # a whole request came: its answer is being made

        def on_response_complete(self) -> None:
            self._arm()
            super().on_response_complete()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

    return DeadlineProtocol


def app(db: str, *, token: str | None, policy: ListenerPolicy):
    """The ASGI application over the database `db`."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    view = livedata.LiveView(db)
    page = Page(view, token)
    page.html()  # the page is ready before the first visitor asks; its latency table is worked out in a thread

    def answer(value, status: int = 200) -> Response:
        return Response(livedata.dumps(value), status, media_type="application/json", headers=HEADERS)

    def number(request, name: str, default=None, kind=int):
        value = request.query_params.get(name)
        if value is None:
            if default is None:
                raise ValueError(f"{name} is missing")
            return default
        return query_number(name, value, kind)

    def endpoint(fn):
        def handler(request):
            try:
                return fn(request)
            except filterlang.FilterError as exc:
                return answer({"error": str(exc), "column": exc.column}, 400)
            except ValueError as exc:
                return answer({"error": str(exc)}, 400)
        return handler

    def index(request):
        body, csp = page.html()
        return Response(body, media_type="text/html; charset=utf-8", headers={**HEADERS, "Content-Security-Policy": csp})

    def summary(request):
        return answer(view.summary())

    def poll(request):
        view.refresh()
        return answer({"version": view.changes, "total": view.total})

    def rows(request):
        return answer(view.rows(request.query_params.get("filter", ""), number(request, "offset", 0),
                                number(request, "limit", 100)))

    def locate(request):
        return answer({"position": view.locate(request.query_params.get("filter", ""),
                                               request.query_params.get("session", ""), number(request, "seq"))})

    def frame(request):
        found = view.frame(request.query_params.get("session", ""), number(request, "seq"))
        return answer(found) if found is not None else answer({"error": "no such frame"}, 404)

    def window(request):  # a session's (?session=ID) or a run's (?run=ID)
        rid = request.query_params.get("run")
        asked = (number(request, "from", kind=float), number(request, "to", kind=float),
                 number(request, "max", livedata.WINDOW_MAX), request.query_params.get("filter", ""))
        if rid is None:
            return answer(view.window(request.query_params.get("session", ""), *asked))
        return answer(liveruns.window(view, rid, *asked))

    def gaps(request):
        rid = request.query_params.get("run")
        return answer(view.gaps(request.query_params.get("session", "")) if rid is None else liveruns.gaps(view, rid))

    def stderr(request):
        return answer(view.stderr(request.query_params.get("session", "")))

    def metrics(request):
        from mcptap.report import metrics as prometheus

        body, kind = prometheus.exposition(view.conn())
        return Response(body, media_type=kind, headers=HEADERS)

    routes = [Route("/", index), Route("/metrics", metrics)] + [Route(f"/api/{fn.__name__}", endpoint(fn))
                                     for fn in (summary, poll, rows, locate, frame, window, gaps, stderr)]
    return Guard(Starlette(routes=routes), policy, token)


def serve(db: str, *, listen: str | None = None, token: bool = True, open_browser: bool = False,
          allow_origins: Sequence[str] = (), on_ready: Callable[[str], None] | None = None) -> int:
    """Serve the viewer over `db` until interrupted; `on_ready(url)` once it listens (the URL to
    open, with its token). Exit status 0."""
    import uvicorn

    host, port = parse_listen(listen)
    policy = ListenerPolicy(host, allow_origins)
    secret = secrets.token_urlsafe(24) if token else None
    application = app(db, token=secret, policy=policy)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise MCPTapError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/" + (f"?token={secret}" if secret else "")
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", access_log=False, lifespan="off",
                                           timeout_graceful_shutdown=1, http=_protocol(),
                                           timeout_keep_alive=KEEP_ALIVE_S, h11_max_incomplete_event_size=HEADER_BYTES))
    if on_ready is not None:
        on_ready(url)
    if open_browser:
        def opener():
            deadline = time.monotonic() + 10
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            import webbrowser
            webbrowser.open(url)
        threading.Thread(target=opener, daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
