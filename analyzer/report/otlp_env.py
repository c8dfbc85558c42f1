"""Where a capture's live telemetry goes (`--otlp-endpoint`, analyzer/report/otlp_live.py), read as
the OpenTelemetry exporter configuration says (OTLP exporter specification, "Configuration
options"): `OTEL_EXPORTER_OTLP_ENDPOINT` is a base URL (`v1/traces`, `v1/metrics` added), the
signal's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT` is used as it is;
`..._HEADERS` (`k=v,k2=v2`, values percent-decoded; the signal's own list replaces the general
one), `..._TIMEOUT` (milliseconds, default 10000), `..._COMPRESSION` (`gzip`, `none`) and
`..._PROTOCOL` (`http/protobuf`, the default, or `http/json`; `grpc` is refused: the capture
sends OTLP/HTTP). The command's `--otlp-endpoint URL` is a base URL like the general variable and
wins over every endpoint variable. Standard library only: the tee reads this before it starts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from mcptap import options

OPTION_ENV = "MCPTAP_OTLP_ENDPOINT"
"""How the command's `--otlp-endpoint` reaches the recorder process (its environment, not its
command line: nothing of the endpoint shows in a process list)."""
ENDPOINT_VARS = options.OTLP_ENDPOINT_VARS
DEFAULT_TIMEOUT_MS = 10_000
PROTOCOLS = ("http/protobuf", "http/json")


@dataclass(frozen=True)
class Target:
    """One signal's destination: its URL, headers, timeout in seconds, encoding, compression."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000
    json: bool = False
    gzip: bool = True


@dataclass(frozen=True)
class Config:
    traces: Target
    metrics: Target


def wanted(option: str | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether live telemetry is asked for (the option, or an endpoint variable), cheaply."""
    if option:
        return True
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARS)


def _checked(url: str, where: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{where}: expected an http:// or https:// URL")
    return url


def _base(url: str, signal: str) -> str:
    return f"{url.rstrip('/')}/v1/{signal}"


def _headers(text: str, where: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"{where}: expected key=value pairs separated by commas")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def _var(environ: Mapping[str, str], signal: str, name: str) -> tuple[str | None, str]:
    """(value, variable) of the signal's own variable, else the general one."""
    for var in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = environ.get(var, "").strip()
        if value:
            return value, var
    return None, ""


def _target(option: str | None, environ: Mapping[str, str], signal: str) -> Target:
    own = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    general = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if option:
        url = _base(_checked(option, "--otlp-endpoint"), signal)
    elif own:
        url = _checked(own, f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    elif general:
        url = _base(_checked(general, "OTEL_EXPORTER_OTLP_ENDPOINT"), signal)
    else:
        raise ValueError(f"no OTLP endpoint for {signal}")
    headers, var = _var(environ, signal, "HEADERS")
    timeout, tvar = _var(environ, signal, "TIMEOUT")
    protocol, pvar = _var(environ, signal, "PROTOCOL")
    compression, cvar = _var(environ, signal, "COMPRESSION")
    try:
        timeout_ms = float(timeout) if timeout is not None else DEFAULT_TIMEOUT_MS
    except ValueError:
        raise ValueError(f"{tvar}: expected milliseconds, got {timeout!r}") from None
    if not 0 < timeout_ms < float("inf"):
        raise ValueError(f"{tvar}: expected a positive number of milliseconds")
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"{pvar}: {protocol!r} is not sent by mcptap (one of: {', '.join(PROTOCOLS)})")
    if compression is not None and compression not in ("gzip", "none"):
        raise ValueError(f"{cvar}: expected gzip or none")
    return Target(url, _headers(headers, var) if headers else {}, timeout_ms / 1000,
                  json=protocol == "http/json", gzip=compression != "none")


def resolve(option: str | None, environ: Mapping[str, str] = os.environ) -> Config | None:
    """The live telemetry's destinations, or None when none is asked for; ValueError (one line)
    for a value that cannot be used."""
    if not wanted(option, environ):
        return None
    if not option and not (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()):
        own = {s: environ.get(f"OTEL_EXPORTER_OTLP_{s.upper()}_ENDPOINT", "").strip() for s in ("traces", "metrics")}
        if not own["traces"]:  # metrics alone: no spans are sent
            raise ValueError("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set without a traces endpoint: "
                             "set OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        if not own["metrics"]:
            return Config(_target(None, environ, "traces"), _target(None, {**environ, "OTEL_EXPORTER_OTLP_ENDPOINT":
                                                                             _sibling(own["traces"])}, "metrics"))
    return Config(_target(option, environ, "traces"), _target(option, environ, "metrics"))


def _sibling(traces_url: str) -> str:
    """A traces URL's base, for the metrics beside it when only the traces endpoint is named."""
    return traces_url[: -len("/v1/traces")] if traces_url.rstrip("/").endswith("/v1/traces") else traces_url.rstrip("/")
