"""The registry of finding rules (docs/findings.md). One rule is one small unit: a stable code,
a group, a severity per profile, the spec reference it rests on, a one-line summary, the
events it listens to, and a pure check that returns findings. Rules never touch SQLite, files
or the network: they get a message and the session's state (analyzer/analysis/session.py).

Events: `envelope` (a structural signature, analyzer/analysis/classify.py; the check returns the text
of the finding or None, and is evaluated once per distinct signature), `frame` (every frame as
a whole), `request`, `notification`, `response` (results and errors), `exchange` (an HTTP
exchange of the session, with the kinds of the messages its request carried; checked once the
frames are analysed), `end` (the session is over). Layer `mcp` rules run only when the session's MCP revision is known."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
EVENTS = frozenset({"envelope", "frame", "request", "notification", "response", "exchange", "end"})
GROUPS = ("envelope", "pairing", "lifecycle", "methods", "transport")


@dataclass(frozen=True, slots=True)
class Hit:
    """What a check found. `seq`/`idx` default to the message being checked; `related` is the
    other frame involved (the request a response answers, ...); `severity` overrides the rule's
    where the spec makes it depend on the case."""

    message: str
    seq: int | None = None
    idx: int | None = None
    related: int | None = None
    severity: str | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    group: str
    severity: str | dict[str, str]
    """One severity, or one per profile: 'jsonrpc' (no MCP revision known), 'mcp' (any known
    revision) or a revision string (wins over 'mcp')."""
    ref: str
    summary: str
    on: tuple[str, ...]
    layer: str
    check: Callable[..., Any]
    when: frozenset[str] | None = None
    """Facts that must be present for the check to run (any of them); None: always. The session
    core works out each message's facts (its pairing, its method's verdict, lifecycle phase...)
    and each frame's tags (its kind, `duplicates`, ...), so that a conformant frame reaches no
    check at all."""

    def severity_for(self, revision: str | None) -> str:
        sev = self.severity
        if isinstance(sev, str):
            return sev
        if revision is None:
            return sev.get("jsonrpc", sev.get("mcp", "error"))
        return sev.get(revision, sev.get("mcp", sev.get("jsonrpc", "error")))


RULES: dict[str, Rule] = {}


def rule(code: str, *, group: str, severity: str | dict[str, str], ref: str, summary: str,
         on: Iterable[str], layer: str = "jsonrpc", when: Iterable[str] | None = None) -> Callable:
    """Register a check under a finding code (codes are a contract: never renamed)."""
    events = tuple(on)
    unknown = set(events) - EVENTS
    if unknown or group not in GROUPS or layer not in ("jsonrpc", "mcp"):
        raise ValueError(f"rule {code}: bad events {unknown}, group {group!r} or layer {layer!r}")

    def register(check: Callable) -> Callable:
        if code in RULES:
            raise ValueError(f"finding code {code} registered twice")
        RULES[code] = Rule(code, group, severity, ref, summary, events, layer, check,
                           frozenset(when) if when is not None else None)
        return check

    return register


def load() -> dict[str, Rule]:
    """Import every rule module (registration happens on import) and return the registry."""
    from mcptap.analysis.rules import envelope, lifecycle, methods, pairing, progress, transport  # noqa: F401

    return RULES
