"""`mcptap report`: one self-contained HTML file (no network fetch: styles inline, figures as
PNG data URIs) with the sessions, each finding linked to the frames around it, the per-method
latency table and each session's sequence diagram. Every text from the recording goes through
`html.escape` (a frame holding `<script>` shows as text); frames are cut to SHOWN_BYTES for
display (the database keeps them whole); characters a browser would act on or hide (controls, bidi
overrides) are shown as their escapes. Long sessions are summarised by the diagram
(analyzer/plots.py) and only the frames around findings are listed; many sessions by the
MAX_DETAILED with the most severe findings (the others are rows of the sessions table)."""

from __future__ import annotations

import base64
import html
import io
import warnings
from collections.abc import Callable, Sequence

import pandas as pd

from mcptap import __version__, data, engine, outfile, plots, store
from mcptap.report import httplines
from mcptap.store import queries
from mcptap.wire.textsafe import printable

SHOWN_BYTES = 2000
AROUND = 2  # frames shown before and after each finding's frame
MAX_FINDINGS = 500  # per session, in the report (the database has them all)
MAX_DETAILED = 50
"""Sessions given their own part (sequence diagram, findings, frames): the ones with the most
severe findings first; the others are rows of the sessions table. A diagram takes a good part
of a second to draw: thousands of them took minutes."""
MAX_LISTED = 1000
"""Rows of the sessions table (the ones with the most severe findings first); one line says how
many more there are."""

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.error { color: #b00020; } .warning { color: #b35c00; } .info { color: #1f5fa8; }
pre { white-space: pre-wrap; word-break: break-all; margin: 0; font-size: 12px; }
tr.hit { background: #fff3f3; } .muted { color: #777; }
img { max-width: 100%; }
"""


def _e(value) -> str:
    """Text from the recording as HTML: escaped, and every character a browser would act on or
    hide (a control, a bidi override such as U+202E) written as its escape (textsafe.printable)."""
    if value is None or (not isinstance(value, (str, bytes)) and pd.isna(value)):
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    return html.escape(printable(str(value)), quote=True)


def _shown(raw) -> str:
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "backslashreplace")
    else:
        text = "" if raw is None else str(raw)
    if len(text) > SHOWN_BYTES:
        return _e(text[:SHOWN_BYTES]) + f'<span class="muted"> … ({len(text):,} characters in all)</span>'
    return _e(text)


def _png(fig) -> str:
    buf = io.BytesIO()
    with warnings.catch_warnings():  # a method name in a script the font lacks: drawn as boxes, said nowhere
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _table(frame: pd.DataFrame, columns: Sequence[str], *, index: bool = False) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in ((frame.index.name or "",) if index else ()) + tuple(columns))
    body = []
    for key, *values in zip(frame.index, *(frame[c] for c in columns)):  # each value keeps its column's type
        cells = [f"<td>{_e(key)}</td>"] if index else []
        cells += [f"<td>{_e(v)}</td>" for v in values]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render(db: str, *, session: str | None = None, progress: Callable[[int], None] | None = None,
           stage: Callable[[str, int | None], None] | None = None) -> str:
    """The report as HTML text (analysing the database first when it has not been).
    `stage(what, frames)`: a step begins (analysing, reading the messages, writing each
    session's part); `progress(n)`: n more of its frames done."""
    conn = store.open_existing(db)
    try:
        ids = [store.resolve_session(conn, session)] if session else store.session_ids(conn)
        analysed = store.has_table(conn, "analyses") and set(store.analysis_summaries(conn)) >= set(ids)
        counts = store.frames_per_session(conn)
    finally:
        conn.close()
    sizes = {sid: counts.get(sid, 0) for sid in ids}
    progress = progress or (lambda n: None)
    stage = stage or (lambda what, total: None)
    if not analysed and ids:
        stage("analyzing", sum(sizes.values()))
        engine.analyze(db, session=session, progress=progress)
    stage("reading the messages", None)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mcptap report: {_e(db)}</title>"
             f"<style>{STYLE}</style></head><body><h1>mcptap report</h1>"
             f"<p class='muted'>{_e(db)} · mcptap {_e(__version__)}</p>"]
    sessions = data.sessions(db)
    sessions = sessions[sessions["id"].isin(ids)]
    if sessions.empty:
        parts.append("<p>No sessions in this database.</p></body></html>")
        return "".join(parts)
    parts.append("<h2>Sessions</h2>")
    ranked = _worst_first(sessions)
    shown = ranked.head(MAX_LISTED) if len(ranked) > MAX_LISTED else sessions
    detailed = list(ranked["id"].head(MAX_DETAILED)) if len(ranked) > MAX_DETAILED else ids
    shown = shown.assign(started_at=shown["started_at"].dt.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3] + "Z",
                         duration_s=shown["duration_s"].round(3))
    parts.append(_table(shown, ["id", "label", "transport", "revision", "started_at", "duration_s", "frames",
                                "errors", "warnings", "infos"]))
    if len(shown) < len(sessions):
        parts.append(f"<p class='muted'>The {len(shown):,} sessions with the most severe findings of "
                     f"{len(sessions):,}; <code>mcptap sessions --format json</code> lists every one.</p>")
    msgs = _requests_and_errors(db, ids if session else None)
    table = data.latency(msgs) if not msgs.empty else pd.DataFrame()
    parts.append("<h2>Service response time per method</h2>")
    if not table.empty:
        table = table.astype({"calls": "int64", "errors": "int64", "tool_errors": "int64", "unanswered": "int64"}
                             ).round(6)
    parts.append(_table(table, list(table.columns), index=True) if not table.empty else
                 "<p class='muted'>No answered requests.</p>")
    stage("writing the report", sum(sizes[sid] for sid in detailed))
    if len(detailed) < len(ids):
        parts.append(f"<p class='muted'>Diagrams, findings and frames of the {len(detailed):,} sessions with the "
                     f"most severe findings of {len(ids):,} follow; <code>mcptap report --session ID</code> gives "
                     "any other's.</p>")
    for sid in detailed:
        parts.append(_session(db, sid))
        progress(sizes[sid])
    parts.append("</body></html>")
    return "".join(parts)


def _requests_and_errors(db: str, ids: list[str] | None) -> pd.DataFrame:
    """The `messages` rows data.latency reads (kind, method, paired_frame, latency_s, tool_error) of
    the requests, error answers and tool errors, of these sessions (None: all), in one query: data.messages reads
    session by session, which thousands of small sessions made take a minute."""
    conn = store.open_existing(db)
    try:
        if not store.has_table(conn, "messages"):
            return pd.DataFrame()
        sql, params = queries.requests_and_errors(ids)
        msgs = pd.read_sql_query(sql, conn, params=params, dtype={"paired_frame": "Int64", "latency_s": "float64"})
        failed = len(data.tool_errors(conn, ids))  # tools/call answers with isError: one row each
        return pd.concat([msgs.assign(tool_error=False), pd.DataFrame(
            {"kind": ["response"] * failed, "method": ["tools/call"] * failed, "tool_error": [True] * failed})],
            ignore_index=True) if failed else msgs.assign(tool_error=False)
    finally:
        conn.close()


def _worst_first(sessions: pd.DataFrame) -> pd.DataFrame:
    """The sessions, those with the most errors first, then warnings, then infos (a stable sort:
    recording order among equals)."""
    counts = sessions[["errors", "warnings", "infos"]].fillna(0)
    order = counts.sort_values(["errors", "warnings", "infos"], ascending=False, kind="stable").index
    return sessions.loc[order]


def _session(db: str, sid: str) -> str:
    out = [f"<h2 id='s-{_e(sid)}'>Session {_e(sid)}</h2>"]
    fig = plots.sequence(db, sid)
    out.append(f"<img alt='sequence diagram of session {_e(sid)}' class='sequence' src='{_png(fig)}'>")
    conn = store.open_existing(db)
    try:
        out.append(httplines.html_table(httplines.role_exchanges(conn, sid)))
    finally:
        conn.close()
    found = data.findings(db, session=sid)
    if found.empty:
        out.append("<p>No findings.</p>")
        return "".join(out)
    shown = found.head(MAX_FINDINGS)
    out.append(f"<h3>Findings ({len(found):,})</h3><table><tr><th>severity</th><th>code</th><th>frame</th>"
               "<th>message</th></tr>")
    for row in shown.itertuples(index=False):
        anchor = f"#f-{_e(sid)}-{int(row.frame_seq)}" if not pd.isna(row.frame_seq) else ""
        frame = f"<a href='{anchor}'>{int(row.frame_seq)}</a>" if anchor else ""
        out.append(f"<tr><td class='{_e(row.severity)}'>{_e(row.severity)}</td><td>{_e(row.code)}</td>"
                   f"<td>{frame}</td><td>{_e(row.message)}</td></tr>")
    out.append("</table>")
    if len(found) > len(shown):
        out.append(f"<p class='muted'>{len(found) - len(shown):,} more findings in the database.</p>")
    hits = {int(s) for s in shown["frame_seq"].dropna()}
    wanted = sorted({s for hit in hits for s in range(hit - AROUND, hit + AROUND + 1) if s > 0})
    out.append("<h3>Frames around the findings</h3><table><tr><th>#</th><th>time</th><th>dir</th><th>frame</th></tr>")
    conn = store.open_existing(db)
    try:
        for seq in wanted:
            row = queries.frame_at(conn, sid, seq)
            if row is None:
                continue
            ts, direction, raw = row
            klass = " class='hit'" if seq in hits else ""
            arrow = "→" if direction == "c2s" else "←"
            out.append(f"<tr id='f-{_e(sid)}-{seq}'{klass}><td>{seq}</td>"
                       f"<td>{_e(pd.Timestamp(ts, unit='s', tz='UTC').isoformat())}</td>"
                       f"<td>{_e(direction)} {arrow}</td><td><pre>{_shown(raw)}</pre></td></tr>")
    finally:
        conn.close()
    out.append("</table>")
    return "".join(out)


def write(db: str, path: str, *, session: str | None = None, progress: Callable[[int], None] | None = None,
          stage: Callable[[str, int | None], None] | None = None) -> None:
    text = render(db, session=session, progress=progress, stage=stage)
    with outfile.private_text(path) as fh:
        fh.write(text)



