"""Tool drift: the definitions each server declared kept as a baseline (plain JSON, sorted and
indented, reviewable in a pull request), and a session's definitions judged against it and
against its own earlier listings (the `definitions` rules, analyzer/analysis/rules/declared_checks.py).
Pure: `Declared` records and dicts in, baseline documents and finding rows out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.analysis import cost, rules
from mcptap.analysis.declared import CHANGED, KINDS, REMOVED, Declared, Delta, compare
from mcptap.analysis.messages import Finding
from mcptap.errors import MCPTapError

FORMAT = 1
"""The baseline document's version (`mcptap_baseline`)."""
UNKNOWN_VERSION = ""
"""The version key of a server that named none."""


class BaselineError(MCPTapError):
    """A baseline file that is not one mcptap wrote."""


@dataclass
class Context:
    """What a definitions check is told besides the delta: the server, what it was compared with
    (a baseline's label, or None for the session's own earlier listing), whether list_changed
    announced the new listing, and the tools/call frames that used the definition since."""
    server: str
    against: str | None
    announced: bool = False
    calls: list[int] = field(default_factory=list)


def server_key(declared: Declared, label: str | None) -> tuple[str, str]:
    """(name, version) a server is kept under: its serverInfo, else the session's label."""
    return declared.name or label or declared.session_id, declared.version or UNKNOWN_VERSION


def document(declared: list[tuple[Declared, str | None]]) -> dict:
    """The baseline of these sessions (in start order: a later session's definitions of the same
    server and version win): {"mcptap_baseline": 1, "servers": {name: {version: definitions}}}."""
    servers: dict[str, dict[str, Any]] = {}
    for d, label in declared:
        defs = d.definitions()
        if not defs:
            continue
        name, version = server_key(d, label)
        servers.setdefault(name, {}).setdefault(version, {}).update(defs)
    return {"mcptap_baseline": FORMAT, "servers": servers}


def check_document(doc: Any, where: str) -> dict:
    """`doc` if it is a baseline document mcptap can read, else BaselineError naming `where`."""
    if type(doc) is not dict or doc.get("mcptap_baseline") != FORMAT or type(doc.get("servers")) is not dict:
        raise BaselineError(f"{where} is not an mcptap baseline (version {FORMAT}): write one with `mcptap baseline`")
    for name, versions in doc["servers"].items():
        if type(versions) is not dict or not all(type(v) is dict for v in versions.values()):
            raise BaselineError(f"{where}: servers.{name} must map versions to definitions")
        for version, defs in versions.items():
            for kind, items in defs.items():
                ok = type(items) is str if kind == "instructions" else (
                    kind in KINDS and type(items) is dict and all(type(d) is dict for d in items.values()))
                if not ok:
                    raise BaselineError(f"{where}: servers.{name}.{version}.{kind} is not what mcptap baseline "
                                        "writes (tools, prompts, resources, resourceTemplates by name; instructions)")
    return doc


def approved(doc: dict, name: str, version: str) -> tuple[dict, str] | None:
    """The baseline's definitions for this server (its version, else its last version listed) and
    how to name them, or None when the baseline has no such server."""
    versions = doc["servers"].get(name)
    if not versions:
        return None
    if version in versions:
        return versions[version], f"{name} {version}".strip()
    last = sorted(versions)[-1]
    return versions[last], f"{name} {last}, the server now says {version or 'no version'}"


def findings(declared: Declared, label: str | None, baseline: dict | None, policy=None) -> list[Finding]:
    """The definitions findings of one session: each listing against the one before it of the same
    kind in the session, the last of each kind (and the instructions) against the baseline, and
    their cost against the policy's context budget."""
    name, version = server_key(declared, label)
    server = f"server {name!r}" + (f" {version}" if version else "")
    found: list[Finding] = []
    previous: dict[str, Any] = {}
    for listing in declared.listings:
        before = previous.get(listing.kind)
        if before is not None:
            for delta in compare({listing.kind: before.items}, {listing.kind: listing.items}):
                ctx = Context(server, None, listing.announced, _calls_after(declared, delta, listing.seq))
                found.extend(_judged(declared, delta, ctx, listing.seq, before.seq, policy))
        previous[listing.kind] = listing
    if baseline is not None:
        entry = approved(baseline, name, version)
        if entry is not None:
            defs, against = entry
            latest = declared.latest()
            for delta in compare(defs, declared.definitions()):
                seq = latest[delta.kind].seq if delta.kind in latest else declared.instructions_seq
                ctx = Context(server, against, calls=_calls_after(declared, delta, None))
                found.extend(_judged(declared, delta, ctx, seq, None, policy))
    return found + cost.budget_findings(declared, (name, version), policy)


def _calls_after(declared: Declared, delta: Delta, seq: int | None) -> list[int]:
    if delta.kind != "tools" or delta.op == REMOVED:
        return []
    return [s for s, tool in declared.calls if tool == delta.name and (seq is None or s > seq)]


def _judged(declared: Declared, delta: Delta, ctx: Context, seq: int | None, related: int | None,
            policy) -> list[tuple]:
    out = []
    for rule in rules.load().values():
        if "definitions" not in rule.on or rule.code == cost.BUDGET_CODE:
            continue
        hit = rule.check(delta, ctx)
        if hit is None:
            continue
        severity = hit.severity or rule.severity_for("mcp")
        if policy is not None:
            severity = policy.severity(rule.code, severity)
            if severity is None:
                continue
        out.append(Finding(declared.session_id, seq, None, rule.code, severity, hit.message,
                           hit.related if hit.related is not None else related))
    return out


__all__ = ["CHANGED", "KINDS", "BaselineError", "Context", "approved", "check_document", "document", "findings",
           "server_key"]
