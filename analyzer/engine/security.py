"""What the security rules need from the store beyond a session's own frames (which the session
core's pass hands them: analyzer/analysis/security/feed.py): across the sessions of one analysis,
which servers declare which tool names (`catalogue`, for `tool-shadowing`)."""

from __future__ import annotations

import sqlite3
from collections import Counter

import orjson

from mcptap import store
from mcptap.analysis import rules

SHADOWING = "tool-shadowing"
LISTING_NEEDLES = (b'"tools"',)
"""Every tools/list answer has this, and the initialize answer of a server with tools (its
capability); a tools/call has not."""


def enabled(policy, code: str | None = None) -> bool:
    """Whether the policy lets any security rule (or this code) through."""
    codes = [code] if code is not None else [c for c, r in rules.load().items() if r.group == "security"]
    return any(policy is None or policy.severity(c, "error") is not None for c in codes)


def catalogue(conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, list[str]]]:
    """{session id: {tool name: the other servers that declare it}} over these sessions, within each
    run (the sessions one host process or client started, which a model sees together; a session
    recorded without a run has no other to compare with): a server is its serverInfo name (else the
    session's label); sessions of one server are not others. Read from the frames that can be
    initialize or tools/list answers (filtered in SQLite)."""
    servers: dict[str, tuple[str, set[str], str | None]] = {}
    rows = {sid: store.get_session(conn, sid) for sid in ids}
    runs = Counter(row.get("run") for row in rows.values() if row.get("run"))
    for sid in ids:
        row = rows[sid]
        if runs[row.get("run")] < 2:
            continue  # alone in its run, or in none: no other server to compare with, its frames not read
        server, tools = None, set()
        for _seq, direction, raw in store.frames_mentioning(conn, sid, LISTING_NEEDLES):
            if direction == "s2c":
                found, names = _listed(raw)
                server = server or found
                tools |= names
        servers[sid] = (server or row.get("label") or sid, tools, row["run"])
    by_tool: dict[tuple[str | None, str], set[str]] = {}
    for name, tools, run in servers.values():
        for tool in tools:
            by_tool.setdefault((run, tool), set()).add(name)
    out: dict[str, dict[str, list[str]]] = {sid: {} for sid in ids}
    for sid, (name, _tools, run) in servers.items():
        others = {tool: sorted(s for s in names if s != name) for (group, tool), names in by_tool.items() if group == run}
        out[sid] = {tool: names for tool, names in others.items() if names}
    return out


def _listed(raw: bytes) -> tuple[str | None, set[str]]:
    """The server name an initialize answer gives, and the tool names a tools/list answer gives."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, set()
    result = value.get("result") if type(value) is dict else None
    if type(result) is not dict:
        return None, set()
    info = result.get("serverInfo")
    name = info.get("name") if type(info) is dict and type(info.get("name")) is str else None
    tools = result.get("tools")
    names = {t["name"] for t in tools if type(t) is dict and type(t.get("name")) is str} if type(tools) is list else set()
    return name, names


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
