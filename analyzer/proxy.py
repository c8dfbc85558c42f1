"""`mcptap proxy`: mitmproxy in reverse mode, in this process, in front of an HTTP MCP server,
with the recorder addon (addons/http/tap.py) and its guard (addons/http/origin_guard.py: a foreign
Host or Origin is refused, the upstream gets its own Host and the `--upstream` URL's credentials).
Listens on 127.0.0.1 unless told otherwise; Ctrl-C (or SIGTERM) stops it cleanly: open streams are
closed in the record, sessions ended. With `metrics_listen` it also serves Prometheus /metrics of
what it records, on a loopback address only (analyzer/report/livemetrics.py)."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from mcptap import __version__, origins
from mcptap.errors import MCPTapError

DEFAULT_PORT = 8808


def parse_listen(listen: str | None) -> tuple[str, int]:
    """`[HOST:]PORT` (an IPv6 host in brackets) -> (host, port); default 127.0.0.1:8808."""
    return origins.parse_listen(listen, DEFAULT_PORT)


def shown_url(url: str) -> str:
    """The URL as it may be said: whatever comes before its last `@` (a user and password) left out."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}" if sep else url.rpartition("@")[2]


def split_upstream(url: str) -> tuple[str, str]:
    """(origin, path) of the upstream URL: the proxy forwards to the origin (mitmproxy's reverse
    mode takes no path, and no credentials: see addons/http/origin_guard.py); the path is where the
    host should point, through the proxy."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise MCPTapError(f"--upstream {shown_url(url)!r}: expected an http:// or https:// URL")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    return origin, parts.path if parts.path not in ("", "/") else "/"


def public_origin(url: str) -> str:
    """The origin of `--public-url` (scheme://host[:port]); a path is refused (the proxy keeps
    the upstream's paths)."""
    try:
        parts = urlsplit(url)
        parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.username:
        raise MCPTapError(f"--public-url {shown_url(url)!r}: expected an origin, http(s)://HOST[:PORT]")
    return f"{parts.scheme}://{parts.netloc}"


def _check_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        reason = "the address is in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise MCPTapError(f"cannot listen on {host}:{port}: {reason}") from None


def _say_where(master, say: Callable[[str, int], None]) -> None:
    """Say where the proxy listens once it does (port 0 gives a free port)."""
    addrs = master.addons.get("proxyserver").listen_addrs()
    if addrs:
        host, port = addrs[0][:2]
        say(host, port)


def run(upstream: str, db: str, *, listen: str | None = None, label: str | None = None,
        redaction=None, insecure: bool = False, max_frame: int | None = None,
        allow_origins: Sequence[str] = (), on_ready: Callable[[str, int], None] | None = None,
        public_url: str | None = None, metrics_listen: str | None = None,
        on_metrics: Callable[[str, int], None] | None = None, otlp_endpoint: str | None = None) -> int:
    """Run until interrupted; returns the exit status (0 after a clean stop). `redaction`: what
    to redact (analyzer/redaction/__init__.py Redaction; default the contract's); `max_frame`: the largest
    frame stored whole (analyzer/wire/bounded.py; default 128 MiB); `allow_origins`: the
    `--allow-origin` values (analyzer/origins.py); `public_url`: the origin clients reach the proxy
    under (`--public-url`; default: the Host they send), which the OAuth protected-resource metadata
    and the challenges' `resource_metadata` are made to name (addons/http/auth.py); `metrics_listen`:
    `[HOST:]PORT` on a loopback address where /metrics is served (`--metrics-listen`), `on_metrics`
    told where once it is; `otlp_endpoint`: live telemetry (`--otlp-endpoint`, else the
    OTEL_EXPORTER_OTLP_* variables: analyzer/report/otlp_live.py)."""
    from mcptap.origins import ListenerPolicy
    from mcptap.redaction import Redaction

    redaction = redaction or Redaction()
    origin, _ = split_upstream(upstream)
    host, port = parse_listen(listen)
    public = public_origin(public_url) if public_url else None
    hosts = [urlsplit(upstream).hostname] + ([urlsplit(public).hostname] if public else [])
    policy = ListenerPolicy(host, allow_origins, hosts=hosts)
    if port:
        _check_free(host, port)
    metrics_at = None
    if metrics_listen is not None:
        metrics_at = origins.parse_listen(metrics_listen, 0, loopback_only="the proxy's /metrics",
                                          option="--metrics-listen")
        if metrics_at[1]:
            _check_free(*metrics_at)
    from mcptap.record import UsageError, telemetry_recorder

    try:
        recorder_process = telemetry_recorder(otlp_endpoint, "http")
    except UsageError as exc:
        raise MCPTapError(str(exc)) from None
    from mcptap.addons.http.origin_guard import basic_credentials  # mitmproxy: imported once the options are right
    return asyncio.run(_serve(origin, db, host, port, label, redaction, insecure, on_ready, policy,
                              basic_credentials(upstream), max_frame, public, metrics_at, on_metrics,
                              recorder_process))


async def _serve(upstream, db, host, port, label, redaction, insecure, on_ready, policy, authorization,
                 max_frame=None, public=None, metrics_at=None, on_metrics=None, recorder_process=None) -> int:
    from mitmproxy import exceptions, options
    from mitmproxy.tools.dump import DumpMaster

    from mcptap.addons.http.auth import Rewriter
    from mcptap.addons.http.tap import STREAM_AT, McpTap
    from mcptap.addons.http.origin_guard import OriginGuard

    opts = options.Options(mode=[f"reverse:{upstream}"], listen_host=host, listen_port=port, ssl_insecure=insecure)
    master = DumpMaster(opts, with_termlog=True, with_dumper=False)
    say = on_ready or (lambda h, p: None)
    # the tap is the only addon added: mitmproxy offers each event of each flow to every addon
    recorder = f"mcptap {__version__} proxy"
    tap = McpTap(recorder=recorder, on_running=lambda: _say_where(master, say),
                 guard=OriginGuard(policy, upstream, authorization), stream_at=STREAM_AT,
                 rewriter=Rewriter(upstream, public), recorder_process=recorder_process)
    master.addons.add(tap)
    try:
        # lazy: the upstream is dialled once the request is read, so a refused connection is the
        # client's 502 and a recorded request with its error, not a connection closed unanswered
        # keep_host_header: the guard sees the client's Host, and sets the upstream's (OriginGuard)
        master.options.update(connection_strategy="lazy", keep_host_header=True,
                              mcptap_db=db, mcptap_label=label or "", mcptap_keep_credentials=redaction.keep,
                              mcptap_redact_keys=list(redaction.keys), mcptap_redact_paths=list(redaction.paths),
                              **({"mcptap_max_frame": max_frame} if max_frame else {}),
                              termlog_verbosity="warn")
    except exceptions.OptionsError as exc:
        raise MCPTapError(str(exc).removeprefix("mcptap: ")) from None
    served = None
    if metrics_at is not None:  # the database is open (and has its tables) once the options are set
        from mcptap.report.livemetrics import LiveMetrics, MetricsServer

        try:
            served = MetricsServer(LiveMetrics(db, recorder=recorder, pid=os.getpid()), *metrics_at)
        except OSError as exc:
            tap.done()
            raise MCPTapError(f"cannot serve /metrics on {metrics_at[0]}:{metrics_at[1]}: "
                              f"{exc.strerror or exc}") from None
        served.start(on_metrics)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, master.shutdown)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            pass
    try:
        await master.run()
    except SystemExit as exc:  # mitmproxy exits on a startup error it logged
        if tap.journal is not None:
            tap.done()
        raise MCPTapError(f"the proxy could not start (see the lines above); exit {exc.code}") from None
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError):
                pass
        if served is not None:
            served.stop()
    return 0


def say_listening(upstream: str, db: str) -> Callable[[str, int], None]:
    origin, path = split_upstream(upstream)

    def say(host: str, port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        print(f"mcptap proxy: listening on http://{shown}:{port}/ -> {origin}, recording into {db} "
              f"(point the host at http://{shown}:{port}{path}; Ctrl-C stops)", file=sys.stderr, flush=True)
    return say


def say_metrics(host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"mcptap proxy: Prometheus metrics at http://{shown}:{port}/metrics", file=sys.stderr, flush=True)
