"""Test helpers for the analysis: build a session's frames in a line or two and run the pure
session analysis (analyzer/analysis/session.py) on them, no database involved; or write them as
a frame log (`write_log`) for a command to import or analyse."""

from __future__ import annotations

import gzip
import json

from mcptap.analysis import revision as revision_mod
from mcptap.analysis.session import SessionAnalysis


def write_log(path, frames, session: str = "s", *, start: float = 1000.0, per_second: float = 100,
              session_records: bool | dict = False):
    """A frame log (docs/contract.md) at `path` of `frames`, [(direction, raw), ...], in one session;
    or of several, `frames` being {session: frames}. A session's i-th frame (seq i + 1) is stamped
    start + i / per_second; `session_records` puts a session record before each session's frames
    (a dict: {session: the fields of its record}, e.g. transport, label, run). A `.gz` name is
    gzip-compressed."""
    sessions = frames if isinstance(frames, dict) else {session: frames}
    lines = []
    for name, some in sessions.items():
        if session_records:
            fields = session_records.get(name, {}) if isinstance(session_records, dict) else {}
            lines.append(json.dumps({"record": "session", "session": name, **fields}))
        lines += [json.dumps({"session": name, "seq": i + 1, "ts": start + i / per_second, "direction": direction,
                              "raw": raw}) for i, (direction, raw) in enumerate(some)]
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(gzip.compress(text) if str(path).endswith(".gz") else text)
    return path


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


class Http(list):
    """An HTTP session: [(direction, raw, exchange id)] in order, and its exchanges' rows."""

    def __init__(self, frames, exchanges):
        super().__init__(frames)
        self.exchanges = exchanges


def http(*steps) -> Http:
    """An HTTP session from steps (exchange fields, [(direction, raw), ...]); the exchange's
    times frame its messages. Fields: method (POST), status (200 with a body, else 202),
    response_type, mcp_session_id, assigned_session, protocol_version, endpoint, outcome."""
    return interleaved([fields for fields, _ in steps],
                       [(d, raw, n) for n, (_, messages) in enumerate(steps) for d, raw in messages])


def interleaved(exchanges: list[dict], frames: list[tuple[str, str, int]]) -> Http:
    """An HTTP session whose exchanges overlap: the exchanges' fields (as for `http`), and the
    frames in wire order as (direction, raw, index of the exchange that carried it)."""
    rows = []
    for n, fields in enumerate(exchanges):
        seqs = [i for i, f in enumerate(frames) if f[2] == n] or [len(frames)]
        start = 1000.0 + seqs[0] * 0.001
        answered = any(f[0] == "s2c" for f in frames if f[2] == n)
        row = {"id": f"x{n}", "method": "POST", "url": "http://127.0.0.1:1/mcp", "status": 200 if answered else 202,
               "response_type": "application/json" if answered else None, "mcp_session_id": None,
               "assigned_session": None, "protocol_version": None, "endpoint": None, "started_at": start - 0.0005,
               "response_at": start + 0.0003, "ended_at": 1000.0 + seqs[-1] * 0.001 + 0.0005, "outcome": "complete"}
        row.update(fields)
        rows.append(row)
    return Http([(d, raw, f"x{n}") for d, raw, n in frames], rows)


def analyze(frames, *, revision: str | None = "detect", stdio: bool = True, ended: bool = True, policy=None):
    """Run the analysis over [(direction, raw), ...] (or an `http()` session); returns
    (SessionAnalysis, rows, findings). Outside HTTP, a frame (direction, raw, full size) was stored
    cut at the capture's --max-frame (analyzer/wire/bounded.py)."""
    exchanges = frames.exchanges if isinstance(frames, Http) else None
    cut = None if exchanges is not None else {i + 1: frame[2] for i, frame in enumerate(frames) if len(frame) == 3}
    rows_in = [(i + 1, 1000.0 + i * 0.001, *(frame if cut is None else frame[:2])) for i, frame in enumerate(frames)]
    if revision == "detect":
        header = next((e["protocol_version"] for e in exchanges or () if e["protocol_version"]), None)
        rev = revision_mod.detect(rows_in, header=header)
        revision, source = rev.revision, rev.source
    else:
        source = "option" if revision else "unknown"
    stored = [(*row[:3], _as_bytes(row[3]), *row[4:]) for row in rows_in]  # as the store gives them
    modes = [("exact", rows_in), ("fast", stored)]
    runs = []
    for mode, rows in modes:
        analysis = SessionAnalysis("s", revision=revision, revision_source=source, stdio=stdio and exchanges is None,
                                   ended=ended, policy=policy, transport="http" if exchanges else None,
                                   exchanges=exchanges, exact_only=mode == "exact", cut=cut or None)
        if exchanges:
            for row in rows:
                analysis.http_frame(*row)
        else:
            analysis.feed(list(rows))
        analysis.end()
        runs.append((analysis, analysis.take_rows(), analysis.take_findings()))
    # every analysis in the tests is also a differential test of the fast path (the envelope scanner,
    # analyzer/_wirescan.c, and SessionAnalysis._fast) against the exact path
    exact, exact_rows, exact_findings = runs[0]
    for analysis, rows, findings in runs[1:]:
        assert (rows, findings, analysis.summary()) == (exact_rows, exact_findings, exact.summary())
        assert outcome(analysis.method_stats) == outcome(exact.method_stats)
    return runs[-1]


def _as_bytes(raw):
    """Frames as the store gives them (bytes), where they can be encoded."""
    try:
        return raw.encode("utf-8") if type(raw) is str else raw
    except UnicodeEncodeError:  # a lone surrogate: only text can hold it
        return raw


def outcome(method_stats: dict) -> dict:
    """Per-method statistics in comparable form (latency sketches by their quantiles)."""
    return {m: (s["calls"], s["errors"], s["tool_errors"], s["unanswered"], s["latencies"].count,
                [s["latencies"].quantile(q) for q in (0.5, 0.95, 1.0)]) for m, s in method_stats.items()}


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
