"""The security reading of each stored session (analyzer/analysis/security/reading.py): its
frames of listings, tool calls, their answers and elicitations read from the store with what
capture redacted in them, and, across the sessions of one analysis, which servers declare which
tool names (`catalogue`, for `tool-shadowing`)."""

from __future__ import annotations

import sqlite3

from mcptap import store
from mcptap.analysis import drift, rules
from mcptap.analysis.security.reading import Reading

SHADOWING = "tool-shadowing"


def enabled(policy, code: str | None = None) -> bool:
    """Whether the policy lets any security rule (or this code) through."""
    codes = [code] if code is not None else [c for c, r in rules.load().items() if r.group == "security"]
    return any(policy is None or policy.severity(c, "error") is not None for c in codes)


def judge_session(conn: sqlite3.Connection, sid: str, policy=None, seqs: list[int] | None = None) -> list[tuple]:
    """The security findings of one session, read from the frames `seqs` (`reading.wanted` of its
    message rows)."""
    if not seqs:
        return []
    catalogue = (getattr(policy, "catalogue", None) or {}).get(sid)
    reading = Reading(sid, policy, catalogue)
    if not reading.active:
        return []
    for seq, ts, direction, raw, redacted in store.frames_read_by_seq(conn, sid, seqs):
        reading.frame(seq, ts, direction, raw, redacted)
    return reading.end()


def catalogue(conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, list[str]]]:
    """{session id: {tool name: the other servers that declare it}} over these sessions: a server is
    its serverInfo name (else the session's label); sessions of one server are not others."""
    from mcptap.engine.definitions import each_declared

    servers: dict[str, tuple[str, set[str]]] = {}
    for declared, label in each_declared(conn, ids):
        name = drift.server_key(declared, label)[0]
        tools = set(declared.definitions().get("tools", {}))
        servers[declared.session_id] = (name, tools)
    by_tool: dict[str, set[str]] = {}
    for name, tools in servers.values():
        for tool in tools:
            by_tool.setdefault(tool, set()).add(name)
    out: dict[str, dict[str, list[str]]] = {}
    for sid, (name, _tools) in servers.items():
        others = {tool: sorted(s for s in names if s != name) for tool, names in by_tool.items()}
        out[sid] = {tool: names for tool, names in others.items() if names}
    return out


def prepared(conn: sqlite3.Connection, ids: list[str], policy):
    """The policy an analysis of these sessions runs with: when more than one session is analysed
    and `tool-shadowing` runs, a copy holding the catalogue of which servers declare which tools."""
    if len(ids) < 2 or not enabled(policy, SHADOWING):
        return policy
    import dataclasses

    from mcptap.analysis.policy import Policy

    found = catalogue(conn, ids)
    if not any(found.values()):
        return policy
    return dataclasses.replace(policy if policy is not None else Policy(), catalogue=found)
