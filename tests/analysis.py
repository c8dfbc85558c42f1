"""Test helpers for the analysis: build a session's frames in a line or two and run the pure
session analysis (analyzer/session.py) on them, no database involved."""

from __future__ import annotations

import json

from analyzer import revision as revision_mod
from analyzer.session import SessionAnalysis


def j(**members) -> str:
    """A compact JSON object; `id_` and `json_rpc` stand for `id` and `jsonrpc` when needed."""
    return json.dumps(members, separators=(",", ":"))


def req(id, method, params=None, **extra) -> str:
    msg = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    msg.update(extra)
    return json.dumps(msg, separators=(",", ":"))


def note(method, params=None) -> str:
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":"))


def ok(id, result=None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id, "result": {} if result is None else result}, separators=(",", ":"))


def err(id, code=-32600, message="bad") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}, separators=(",", ":"))


def handshake(version="2025-06-18", server_caps=None, client_caps=None, start_id=0) -> list[tuple[str, str]]:
    """initialize, its result, notifications/initialized."""
    caps = {"tools": {}, "logging": {}, "prompts": {}, "resources": {"subscribe": True}} if server_caps is None else server_caps
    return [
        ("c2s", req(start_id, "initialize", {"protocolVersion": version, "capabilities": client_caps or {},
                                            "clientInfo": {"name": "t", "version": "1"}})),
        ("s2c", ok(start_id, {"protocolVersion": version, "capabilities": caps,
                              "serverInfo": {"name": "s", "version": "1"}})),
        ("c2s", note("notifications/initialized")),
    ]


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


def modern(id, method, params=None, **meta) -> str:
    p = dict(params or {})
    p["_meta"] = {**MODERN_META, **meta}
    return req(id, method, p)


def analyze(frames, *, revision: str | None = "detect", stdio: bool = True, ended: bool = True, policy=None):
    """Run the analysis over [(direction, raw), ...]; returns (SessionAnalysis, rows, findings)."""
    rows_in = [(i + 1, 1000.0 + i * 0.001, d, raw) for i, (d, raw) in enumerate(frames)]
    if revision == "detect":
        rev = revision_mod.detect(rows_in)
        revision, source = rev.revision, rev.source
    else:
        source = "option" if revision else "unknown"
    analysis = SessionAnalysis("s", revision=revision, revision_source=source, stdio=stdio, ended=ended,
                               policy=policy)
    for seq, ts, d, raw in rows_in:
        analysis.frame(seq, ts, d, raw)
    analysis.end()
    return analysis, analysis.take_rows(), analysis.take_findings()


def codes(frames, **kw) -> list[str]:
    """The finding codes, in the order found."""
    return [f[3] for f in analyze(frames, **kw)[2]]


def found(frames, **kw) -> set[tuple[int, str]]:
    """{(frame seq, code)}."""
    return {(f[1], f[3]) for f in analyze(frames, **kw)[2]}


def kinds(frames, **kw) -> list[tuple]:
    """(frame seq, idx, kind) of every messages row, in frame order."""
    rows = analyze(frames, **kw)[1]
    return sorted(((r[1], -1 if r[2] is None else r[2], r[4]) for r in rows))
