"""What the HTML viewer (analyzer/report/html.py) is drawn from: one JSON document with every
frame of the sessions shown, in columns (one array per field: a million frames are a few tens of
megabytes, parsed once by the browser), their findings, HTTP exchanges, stderr lines, the
finding codes' references and the per-method latency statistics.

Frames' bytes are embedded up to RAW_BUDGET characters in all (each cut at SHOWN_CHARS): the
frames with findings, their neighbours and their pairs first, then the others in recording order;
a frame past the budget is listed with its fields, and its detail says how to print its bytes.
Everything from the traffic stays data: the browser shows it as text (analyzer/report/viewer.js)."""

from __future__ import annotations

import numpy as np

from mcptap import store
from mcptap.analysis import rules
from mcptap.report import ruledocs
from mcptap.store import queries, viewpages
from mcptap.wire.textsafe import printable, shown

SHOWN_CHARS = 16_384
"""A frame's bytes embedded for display (the database keeps it whole)."""
RAW_BUDGET = 24_000_000
"""Characters of frames' bytes embedded in all: a report of a million frames stays a file a
browser opens in seconds (README, The report)."""
AROUND = 2  # frames before and after a finding's frame embedded first
NEAR = 20  # a trimmed page: the frames within NEAR of a finding's frame ...
ENDS = 100  # ... and each session's first and last ENDS
STDERR_LINES = 20_000  # per session
STDERR_CHARS = 4096  # of one stderr line
STDERR_BUDGET = 1_048_576  # characters of a session's stderr lines
MAX_FINDINGS = 100_000  # in all (the database has them all)

KINDS = ["request", "notification", "response", "error", "batch", "invalid", "unparseable"]
DIRECTIONS = ["c2s", "s2c"]
SEVERITIES = ["error", "warning", "info"]


COLUMNS = {"s": np.int32, "seq": np.int64, "t": np.float64, "d": np.int8, "k": np.int8, "m": np.int32,
           "p": np.int64, "l": np.float64, "z": np.int64, "x": np.int32, "b": np.int8}
"""The frames' numeric fields, one array each (docs/contract.md, The report): s session number, seq,
t seconds since the session started, d direction number, k kind number (-1: not analysed), m
method number (-1: none), p the paired frame's seq (0: none), l latency in seconds (NaN, written
null: none), z size in bytes, x exchange number (-1: none), b 1 when the bytes are not UTF-8 (shown
with \\x escapes). Beside them `id` (the JSON-RPC id as written, or null) and `raw`."""


def _array(values, dtype, missing):
    """`values` as a numpy array, a cell of another type (SQLite allows `ts = 'soon'`) as `missing`."""
    try:
        return np.asarray([missing if v is None else v for v in values], dtype=dtype)
    except (TypeError, ValueError):
        def one(v):
            try:
                return dtype(v)
            except (TypeError, ValueError):
                return missing
        return np.asarray([one(v) for v in values], dtype=dtype)


def _number(table: dict, value) -> int:
    if value is None:
        return -1
    n = table.get(value)
    if n is None:
        n = table[value] = len(table)
    return n


def _text(raw) -> str:
    return raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)


def stderr_json(lines, start: float) -> list[list]:
    """[time from the start, text] of each stderr line (ts, head, size), each bounded to
    STDERR_CHARS (`shown`), all to STDERR_BUDGET characters: past it a last line says how many
    were left out."""
    out: list[list] = []
    budget = STDERR_BUDGET
    for k, (ts, head, size) in enumerate(lines):
        text = shown(head, STDERR_CHARS, size)
        if len(text) > budget:
            out.append([round(ts - start, 6), f"… [{len(lines) - k:,} more stderr lines not shown]"])
            break
        budget -= len(text)
        out.append([round(ts - start, 6), text])
    return out


def build(db: str, ids: list[str], latency: list[dict], *, version: str, trim: bool = False,
          open_run: str | None = None) -> dict:
    """The document for these sessions (analysed first by the caller); `trim`: only the frames
    within NEAR of a finding's frame and each session's first and last ENDS (`left_out`: how many
    frames of each session are not in it); `open_run`: the run whose timeline the page opens on."""
    conn = store.open_existing(db)
    try:
        document = _build(conn, db, ids, latency, version, trim)
        document["runs"] = runs_json(conn, [s["id"] for s in document["sessions"]])
        document["open_run"] = open_run
        return document
    finally:
        conn.close()


def _host_name(client) -> str:
    """The name of a run's host lane: the host application its command line named (`wrap` writes
    it), else the host's program, else the HTTP client's User-Agent or address."""
    if isinstance(client, dict):
        for key in ("host_app", "exe", "user_agent", "address"):
            if client.get(key):
                return printable(str(client[key]))
    return "client"


def runs_json(conn, ids: list[str]) -> list[dict]:
    """The runs that hold any of these sessions, as the diagram draws their timelines (both
    faces): run, handle, host (the client lane's name), started_at (its first session's start:
    the timeline's zero), sessions (their ids among `ids`, in start order) and servers (each one's
    lane name, report/runview.py's server_names)."""
    from mcptap.report import runview
    from mcptap.store import runlist

    wanted = set(ids)
    out = []
    for r in runview.run_objects(conn):
        sids = [sid for sid in runlist.run_sessions(conn, r["run"]) if sid in wanted]
        if not sids:
            continue
        names = runview.server_names(conn, sids)
        out.append({"run": r["run"], "handle": r["handle"] or r["run"], "host": _host_name(r["client"]),
                    "started_at": r["started_at"], "sessions": sids, "servers": [names[sid] for sid in sids]})
    return out


def _near_findings(findings: list[list]) -> set[tuple[int, int]]:
    near = set()
    for n, seq, *_ in findings:
        if seq:
            near.update((n, s) for s in range(seq - NEAR, seq + NEAR + 1))
    return near


def _build(conn, db, ids, latency, version, trim=False) -> dict:
    sessions = [s for s in store.list_sessions(conn) if s["id"] in set(ids)]
    order = {s["id"]: n for n, s in enumerate(sessions)}
    summaries = store.analysis_summaries(conn) if store.has_table(conn, "analyses") else {}
    findings = _findings(conn, [s["id"] for s in sessions], order)
    wanted = _first_wanted(findings)
    methods: dict = {}
    exchanges_of: dict = {}
    exchanges: list[dict] = []
    stderr: list[list] = []
    parts: dict[str, list] = {name: [] for name in COLUMNS}
    ids: list = []
    raws: list = []
    budget = RAW_BUDGET - sum(min(size, SHOWN_CHARS) for size in wanted.values())
    have = queries.frame_columns(conn)
    analysed = store.has_table(conn, "messages")
    near = _near_findings(findings) if trim else set()
    left_out: dict[str, int] = {}
    for n, s in enumerate(sessions):
        sid, start = s["id"], s["started_at"]
        for ex in store.session_exchanges(conn, sid):
            exchanges_of[ex["id"]] = len(exchanges)
            exchanges.append(exchange_json(ex, start))
        rows = queries.viewer_frames(conn, sid, have, analysed, DIRECTIONS, KINDS).fetchall()
        if trim and len(rows) > 2 * ENDS:
            kept = [r for k, r in enumerate(rows) if k < ENDS or k >= len(rows) - ENDS or (n, r[0]) in near]
            if len(kept) < len(rows):
                left_out[sid] = len(rows) - len(kept)
            rows = kept
        stderr.append(stderr_json(viewpages.stderr_lines(conn, sid, STDERR_LINES, 4 * STDERR_CHARS), start))
        if not rows:
            continue
        seq, ts, d, size, exchange, k, mid, method, paired, lat, blob = zip(*rows)
        columns = {"s": [n] * len(rows), "seq": seq, "t": ts, "d": d, "k": k,
                   "m": [_number(methods, v) for v in method], "p": paired, "l": lat, "z": size,
                   "x": [exchanges_of.get(e, -1) for e in exchange], "b": blob}
        for name, dtype in COLUMNS.items():
            parts[name].append(_array(columns[name], dtype, np.nan if dtype is np.float64 else 0))
        parts["t"][-1] = np.round(parts["t"][-1] - start, 6)
        ids.extend(mid)
        taken, budget = _taken(n, seq, parts["z"][-1], wanted, budget)
        texts = dict(queries.frame_texts(conn, sid, SHOWN_CHARS, None if len(taken) == len(rows) else taken))
        raws.extend(_text(texts[q]) if q in texts and texts[q] is not None else None for q in seq)
    frames = {name: np.concatenate(chunks) if chunks else np.zeros(0, dtype) for (name, dtype), chunks in
              zip(COLUMNS.items(), parts.values())}
    frames["id"], frames["raw"] = ids, raws
    return {
        "version": version,
        "db": db,
        "sessions": [_session(s, summaries.get(s["id"])) for s in sessions],
        "kinds": KINDS, "directions": DIRECTIONS, "severities": SEVERITIES,
        "methods": list(methods),
        "codes": _codes(),
        "frames": frames,
        "findings": findings,
        "exchanges": exchanges,
        "stderr": stderr,
        "latency": latency,
        "left_out": left_out,
        "limits": {"shown_chars": SHOWN_CHARS, "raw_budget": RAW_BUDGET, "stderr_lines": STDERR_LINES,
                   "max_findings": MAX_FINDINGS},
    }


def _taken(n: int, seqs, sizes, wanted: dict, budget: int) -> tuple[list[int], int]:
    """The seqs of a session whose bytes are embedded: the wanted ones, and the others in order while
    the budget lasts; and what is left of it."""
    taken = []
    for seq, size in zip(seqs, sizes.tolist()):
        if (n, seq) in wanted:
            taken.append(seq)
        elif budget > 0:
            taken.append(seq)
            budget -= min(size, SHOWN_CHARS)
    return taken, budget


def _findings(conn, ids: list[str], order: dict[str, int]) -> list[list]:
    """[session number, frame seq (0: none), element idx (-1: none), code, severity, message,
    related frame seq (0: none)] of every finding, up to MAX_FINDINGS."""
    if not store.has_table(conn, "findings") or not ids:
        return []
    sql, params = queries.findings_with_time(ids, None, None, {})
    out = []
    for sid, seq, idx, _ts, code, severity, message, related in conn.execute(sql, params):
        out.append([order[sid], seq or 0, -1 if idx is None else idx, code, severity, message, related or 0])
        if len(out) >= MAX_FINDINGS:
            break
    return out


def _first_wanted(findings: list[list]) -> dict[tuple[int, int], int]:
    """The frames whose bytes are embedded whatever the budget: each finding's frame, AROUND
    frames either side, and its related frame (value: an upper bound of the characters)."""
    wanted: dict[tuple[int, int], int] = {}
    for n, seq, _idx, _code, _sev, _msg, related in findings:
        if seq:
            for s in range(max(1, seq - AROUND), seq + AROUND + 1):
                wanted[(n, s)] = SHOWN_CHARS
        if related:
            wanted[(n, related)] = SHOWN_CHARS
        if len(wanted) * SHOWN_CHARS >= RAW_BUDGET:
            break
    return wanted


def _session(s: dict, summary: dict | None) -> dict:
    summary = summary or {}
    return {
        "id": s["id"], "label": s.get("label"), "transport": s.get("transport"), "started_at": s["started_at"],
        "ended_at": s.get("ended_at"), "command": s.get("command"), "upstream": s.get("upstream"),
        "exit_status": s.get("exit_status"), "revision": summary.get("revision"),
        "revision_source": summary.get("revision_source"), "frames": (s.get("c2s") or 0) + (s.get("s2c") or 0),
        "last_ts": s.get("last_ts"), "errors": summary.get("errors"), "warnings": summary.get("warnings"),
        "infos": summary.get("infos"), "run": s.get("run"),
    }


def exchange_json(ex: dict, start: float) -> dict:
    """An exchange as the viewer shows it (times relative to `start`), in both faces."""
    def rel(v):
        return None if v is None else round(v - start, 6)

    return {"method": ex.get("method"), "url": ex.get("url"), "status": ex.get("status"),
            "request_headers": ex.get("request_headers"), "response_headers": ex.get("response_headers"),
            "mcp_session_id": ex.get("mcp_session_id"), "protocol_version": ex.get("protocol_version"),
            "events": ex.get("events"), "outcome": ex.get("outcome"), "redacted": ex.get("redacted"),
            "started": rel(ex.get("started_at")), "ended": rel(ex.get("ended_at"))}


def _codes() -> dict[str, dict]:
    """Each finding code's summary, spec reference and its section of docs/rules.md."""
    return {code: {"summary": r.summary, "ref": r.ref, "help": ruledocs.help_uri(code), "group": r.group}
            for code, r in rules.load().items()}
