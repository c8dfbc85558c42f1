"""What a finding rule is and the registry they are all in: `Rule`, `Hit`, `rule()` that
registers one, and the declared vocabulary of facts a check can subscribe to (`FACTS`). The rule
modules import this, never their package: the package imports them (`load`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
EVENTS = frozenset({"envelope", "frame", "request", "notification", "response", "exchange", "end", "definitions",
                    "operation", "schema", "declared", "call", "result", "elicitation", "redefined", "reading"})
GROUPS = ("envelope", "pairing", "lifecycle", "methods", "transport", "authorization", "definitions", "operations",
          "security")


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
    """The facts (`FACTS`) the check subscribes to: it runs when any of them is present. A check
    on messages or frames names them (the session core works out each message's facts, its
    pairing, its method's verdict, the lifecycle's phase, and each frame's tags, its kind,
    `duplicates`..., so that a conformant frame reaches no check at all); one on envelopes,
    exchanges or the session's end has none (None) and runs on every one."""

    def severity_for(self, revision: str | None) -> str:
        sev = self.severity
        if isinstance(sev, str):
            return sev
        if revision is None:
            return sev.get("jsonrpc", sev.get("mcp", "error"))
        return sev.get(revision, sev.get("mcp", sev.get("jsonrpc", "error")))


SUBSCRIBED_EVENTS = frozenset({"frame", "request", "notification", "response"})
"""The events whose checks subscribe to facts (`Rule.when`); the others run on every one."""

FACTS: dict[str, str] = {
    # a frame's tags (event "frame")
    "unparseable": "the frame is not JSON (or not UTF-8)",
    "invalid": "the frame is JSON but not a JSON-RPC message (or an empty batch)",
    "batch": "the frame is a batch",
    "truncated": "the frame was stored cut at the capture's --max-frame",
    "duplicates": "the frame has a member name twice in one object",
    "answers-batch": "the frame answers a batch's request, or refuses a batch whole",
    # a request's pairing
    "duplicate-outstanding": "its id is that of a request of the same side still awaiting its response",
    "reused": "its id was used by the same side before, and answered",
    # a response's pairing
    "unknown": "its id is that of no request awaiting an answer",
    "other-exchange": "HTTP: its id is that of a request another exchange carried",
    "type-mismatch": "it answers a request whose id was written as another type",
    "duplicate": "its request was answered already",
    "null-with-known-id": "id null, right after a request whose id could be read",
    "notification": "id null, right after a notification",
    "unreadable": "id null, right after input whose id could not be read",
    "batch-refused": "id null, right after a batch: the batch refused whole",
    "http-rejected": "HTTP: the error body of the exchange that carried its request",
    "http-error": "HTTP: an error body in an exchange that carried no request",
    "after-cancel": "it answers a request that was cancelled before",
    "init-response": "it answers the initialize request",
    "tool-call-error": "a JSON-RPC error answering tools/call",
    "result-type": "2026-07-28: its result's resultType is missing or not one the revision defines",
    # a request's or notification's method
    "unknown-method": "the method is in no table of the session's revision",
    "wrong-direction": "the method is defined for the other direction",
    "notification-as-request": "the method is a notification, sent with an id",
    "request-as-notification": "the method is a request, sent without an id",
    "early": "the handshake was not complete when it was sent",
    "version-mismatch": "the server chose another protocol version than the client asked for",
    "gated": "it needs a capability that was not negotiated",
    "meta-missing": "2026-07-28: a client request without the per-request _meta",
    "extension": "the method is one an official extension of the session's revision defines",
    "deprecated": "it uses a feature its revision deprecates, not reported yet in the session (a method, "
                  "_meta logLevel, an inputRequests entry)",
    # a notification's
    "cancel:no-request-id": "notifications/cancelled without a requestId",
    "cancel:initialize": "notifications/cancelled naming the initialize request",
    "cancel:ok": "notifications/cancelled naming a request awaiting its answer",
    "cancel:answered": "notifications/cancelled naming a request answered already",
    "cancel:other-side": "notifications/cancelled naming a request the other side sent",
    "cancel:unknown": "notifications/cancelled naming no request",
    "progress:no-token": "notifications/progress without a progressToken",
    "progress:ok": "notifications/progress for a request in progress, its value increasing",
    "progress:not-increasing": "notifications/progress whose value does not increase",
    "progress:after-completion": "notifications/progress for a request answered already",
    "progress:unknown": "notifications/progress with a token no request carried",
}
"""Every fact the session core (analyzer/analysis/session.py) can give a message or a frame, the
vocabulary `Rule.when` is written in."""

RULES: dict[str, Rule] = {}


def rule(code: str, *, group: str, severity: str | dict[str, str], ref: str, summary: str,
         on: Iterable[str], layer: str = "jsonrpc", when: Iterable[str] | None = None) -> Callable:
    """Register a check under a finding code (codes are a contract: never renamed)."""
    events = tuple(on)
    unknown = set(events) - EVENTS
    if unknown or group not in GROUPS or layer not in ("jsonrpc", "mcp"):
        raise ValueError(f"rule {code}: bad events {unknown}, group {group!r} or layer {layer!r}")
    subscribed = set(events) & SUBSCRIBED_EVENTS
    if subscribed and not when:
        raise ValueError(f"rule {code}: a check on {sorted(subscribed)} names the facts it runs on (when=...)")
    if when is not None and (not subscribed or set(events) - SUBSCRIBED_EVENTS):
        raise ValueError(f"rule {code}: only checks on {sorted(SUBSCRIBED_EVENTS)} alone subscribe to facts")
    undeclared = set(when or ()) - set(FACTS)
    if undeclared:
        raise ValueError(f"rule {code}: facts {sorted(undeclared)} are not in FACTS")

    def register(check: Callable) -> Callable:
        if code in RULES:
            raise ValueError(f"finding code {code} registered twice")
        RULES[code] = Rule(code, group, severity, ref, summary, events, layer, check,
                           frozenset(when) if when is not None else None)
        return check

    return register


