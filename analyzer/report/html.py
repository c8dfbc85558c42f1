"""`mcptap report`: one self-contained HTML file that works as a viewer (a frame list with a display
filter, a detail pane, a time-scaled sequence diagram, statistics), opened from `file://` with no
network: a jinja2 template with autoescaping (viewer.html), the viewer's own script and styles
inlined (filter.js, the display filter language, then viewer.js; viewer.css), and the recording
as one JSON document (analyzer/report/viewdata.py) in a `<script type="application/json">` element, every `<`, `>` and `&` in it written as a JSON
escape so that no frame can close the element. The page's Content-Security-Policy allows nothing
but its own script and styles (by hash): no request of any kind, no other script, even if a frame
found a way into the markup. The script shows text from the traffic only as text."""

from __future__ import annotations

import base64
import datetime
import hashlib
import math
from collections.abc import Callable
from importlib import resources

import jinja2
import orjson
import pandas as pd

from mcptap import __version__, data, engine, outfile, store
from mcptap.report import audit, httplines, viewdata
from mcptap.wire.textsafe import json_text, printable

MAX_FRAMES = 2_000_000
"""Frames the viewer holds: past it, the sessions with the most severe findings first (each whole);
the others are rows of the sessions table (`mcptap report --session ID` gives any of them)."""
MAX_SHOWN = 200_000
"""`mcptap report --max-frames`'s default: every frame up to it, past it the frames around findings
and each session's ends."""
MAX_LISTED = 1000
"""Rows of the sessions table (the ones with the most severe findings first); one line says how
many more there are."""

_SAFE_JSON = {b"<": b"\\u003c", b">": b"\\u003e", b"&": b"\\u0026", "\u2028".encode(): b"\\u2028",
              "\u2029".encode(): b"\\u2029"}
"""What the recording's JSON writes as escapes inside its element: nothing in it can close the element
or open a comment, and no line separator stands in it raw (the same JSON value)."""
_PAYLOAD = "\x00mcptap-payload\x00"  # where the JSON goes in the rendered page


def _asset(name: str) -> str:
    return resources.files("mcptap.report").joinpath(name).read_text(encoding="utf-8")


SCRIPTS = ("filter.js", "viewcommon.js", "viewlocal.js", "viewlive.js", "viewdetail.js", "viewaxis.js", "viewdiagram.js",
           "viewer.js")
"""The viewer's script, in the order the page holds them: the filter language, shared helpers, the
two sources of frames (the embedded document; `mcptap view`'s server), the detail pane, the
diagram, then the list and what ties them together."""


def script_text() -> str:
    """The viewer's script: its modules, one after another (no build step)."""
    return "\n".join(_asset(name) for name in SCRIPTS)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _shown(value) -> str:
    """Text from the recording for the markup (jinja2 escapes it): characters a browser would
    act on or hide (controls, bidi overrides) as their escapes (textsafe.printable)."""
    if value is None or (not isinstance(value, (str, bytes)) and pd.isna(value)):
        return ""
    return printable(str(value))


def _utc(seconds) -> str:
    """The one absolute time format of the report (the viewer's too): ISO 8601 in UTC, microseconds."""
    if seconds is None or seconds is pd.NaT:
        return ""
    if isinstance(seconds, datetime.datetime):
        seconds = seconds.timestamp()
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _ms(value) -> str:
    """Milliseconds as `mcptap analyze` prints them (one decimal; '-' for none)."""
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1f}"


_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENV.filters.update(shown=_shown, utc=_utc, ms=_ms)


def render(db: str, **kw) -> str:
    """The report as HTML text (analysing the database first when it has not been); see `pieces`."""
    return b"".join(pieces(db, **kw)).decode("utf-8")


def pieces(db: str, *, sessions: list[str] | None = None, run: str | None = None,
           progress: Callable[[int], None] | None = None, stage: Callable[[str, int | None], None] | None = None,
           max_frames: int = MAX_SHOWN) -> list[bytes]:
    """The report's bytes in a few pieces (the page around the recording's JSON, and the JSON), so
    that a million frames are written without another copy of them. `run`: the sessions of that run
    (store/runlist.py's references; RunNotFound), the page opening on its timeline, a lane per
    server. `stage(what, frames)`: a step begins (analysing, reading, writing); `progress(n)`: n
    more of its frames done. Past `max_frames` frames in all, the page holds those within
    viewdata.NEAR of each finding and each session's first and last viewdata.ENDS (and says so)."""
    conn = store.open_existing(db)
    try:
        rid = None
        if run is not None:
            from mcptap.store import runlist

            rid = runlist.resolve_run(conn, run)
            sessions = runlist.run_sessions(conn, rid)
        chosen = bool(sessions)
        ids = store.resolve_sessions(conn, sessions) if chosen else store.session_ids(conn)
        analysed = store.has_table(conn, "analyses") and set(store.analysis_summaries(conn)) >= set(ids)
        counts = store.frames_per_session(conn)
    finally:
        conn.close()
    sizes = {sid: counts.get(sid, 0) for sid in ids}
    progress = progress or (lambda n: None)
    stage = stage or (lambda what, total: None)
    if not analysed and ids:
        stage("analyzing", sum(sizes.values()))
        engine.analyze(db, sessions=ids, progress=progress)
    stage("reading the frames", None)
    sessions = data.sessions(db)
    sessions = sessions[sessions["id"].isin(ids)]
    ranked = _worst_first(sessions)
    viewed = _viewed(ranked, sizes)
    latency = _latency(db, ids if chosen else None)
    trim = sum(sizes[sid] for sid in viewed) > max_frames
    document = viewdata.build(db, [sid for sid in ids if sid in viewed], latency, version=__version__, trim=trim,
                              open_run=rid)
    stage("writing the report", None)
    script, style = script_text(), _asset("viewer.css")
    payload = orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)
    payload = json_text(payload.decode("utf-8")).encode("utf-8")  # bidi, format and control characters as \u escapes
    for char, escape in _SAFE_JSON.items():
        payload = payload.replace(char, escape)
    page = _ENV.from_string(_asset("viewer.html")).render(
        db=db, version=__version__, script=script, style=style, payload=_PAYLOAD,
        csp=f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; img-src data:",
        sessions=ranked.head(MAX_LISTED).to_dict("records"), total_sessions=len(sessions), viewed=len(viewed),
        frames=len(document["frames"]["seq"]), latency=latency, left_out=document["left_out"],
        by_code=_by_code(document["findings"]),
        security=audit.section(document["findings"], document["codes"], document["sessions"]),
        in_db=sum(sizes[sid] for sid in viewed), max_frames=max_frames, near=viewdata.NEAR, ends=viewdata.ENDS,
        view_command=f"mcptap show --db {db} SESSION --filter EXPR",
        exchanges=_auth_exchanges(db, ids), runs=_run_rows(document["runs"], document["sessions"]),
        run=next((r for r in document["runs"] if r["run"] == rid), None),
    )
    head, tail = page.split(_PAYLOAD)
    progress(sum(sizes[sid] for sid in viewed))
    return [head.encode("utf-8"), payload, tail.encode("utf-8")]


def _run_rows(runs: list[dict], sessions: list[dict]) -> list[dict]:
    """The runs table's rows (both faces): handle, run, host, started_at, sessions, frames, servers."""
    frames = {s["id"]: s.get("frames") or 0 for s in sessions}
    return [{"run": r["run"], "handle": r["handle"], "host": r["host"], "started_at": r["started_at"],
             "sessions": len(r["sessions"]), "frames": sum(frames.get(sid, 0) for sid in r["sessions"]),
             "servers": ", ".join(r["servers"])} for r in runs[:MAX_LISTED]]


def _latency(db: str, ids: list[str] | None) -> list[dict]:
    """The per-method service response time rows (data.latency: the numbers `mcptap analyze` prints,
    counted by operation)."""
    table = data.latency(db, session=ids)
    if table.empty:
        return []
    return [{"method": str(method), "calls": int(row.calls), "errors": int(row.errors),
             "tool_errors": int(getattr(row, "tool_errors", 0)), "unanswered": int(row.unanswered),
             "p50_ms": _ms(row.p50_s), "p95_ms": _ms(row.p95_s), "max_ms": _ms(row.max_s)}
            for method, row in table.iterrows()]


def _ms(seconds) -> float | None:
    value = _number(seconds)
    return None if value is None else value * 1e3


def _auth_exchanges(db: str, ids: list[str]) -> list[dict]:
    """The HTTP exchanges that are no frames (the authorization flow's, an error's own body), per session."""
    conn = store.open_existing(db)
    try:
        return [{"session": sid, **{k: row.get(k) for k in ("role", "method", "url", "status")}}
                for sid in ids for row in httplines.role_exchanges(conn, sid)]
    finally:
        conn.close()


def _by_code(findings: list[list]) -> list[dict]:
    """The findings counted per code, the most severe codes first, then the most frequent."""
    counts: dict[tuple[str, str], int] = {}
    for _session, _seq, _idx, code, severity, *_ in findings:  # the viewer's rows (viewdata._findings)
        counts[(severity, code)] = counts.get((severity, code), 0) + 1
    rank = {"error": 0, "warning": 1, "info": 2}
    return [{"severity": sev, "code": code, "count": n}
            for (sev, code), n in sorted(counts.items(), key=lambda kv: (rank.get(kv[0][0], 3), -kv[1], kv[0][1]))]


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _viewed(ranked: pd.DataFrame, sizes: dict[str, int]) -> set[str]:
    """The sessions whose frames the viewer holds: the most severe first, while MAX_FRAMES allows
    (always at least one)."""
    viewed, total = set(), 0
    for sid in ranked["id"]:
        n = sizes.get(sid, 0)
        if viewed and total + n > MAX_FRAMES:
            continue
        viewed.add(sid)
        total += n
    return viewed


def _worst_first(sessions: pd.DataFrame) -> pd.DataFrame:
    """The sessions, those with the most errors first, then warnings, then infos (a stable sort:
    recording order among equals)."""
    counts = sessions[["errors", "warnings", "infos"]].fillna(0)
    order = counts.sort_values(["errors", "warnings", "infos"], ascending=False, kind="stable").index
    return sessions.loc[order]


def write(db: str, path: str, *, sessions: list[str] | None = None, run: str | None = None,
          progress: Callable[[int], None] | None = None, stage: Callable[[str, int | None], None] | None = None,
          max_frames: int = MAX_SHOWN) -> None:
    parts = pieces(db, sessions=sessions, run=run, progress=progress, stage=stage, max_frames=max_frames)
    with outfile.private_text(path) as fh:
        fh.flush()
        for part in parts:
            fh.buffer.write(part)
