"""Figures of a recording (matplotlib), drawn from what the pandas API (analyzer/data.py) gives:
a session's sequence diagram, latency per method, findings over time. Each function returns a
`matplotlib.figure.Figure` (no pyplot, no global state: it works headless and in notebooks,
where a returned figure displays itself); none holds analysis logic.

    import mcptap.plots as mp
    mp.sequence("mcp.db", "0193b2")          # host and server lanes, an arrow per message
    mp.latency("mcp.db")                     # latency distribution per method
    mp.findings_timeline("mcp.db")           # findings over time, by code and severity"""

from __future__ import annotations

import sqlite3

from mcptap import extras

extras.need("notebook", "the figures (mcptap.plots)")

import pandas as pd  # noqa: E402 - after the check that names the extra
from matplotlib.figure import Figure  # noqa: E402

from mcptap import data  # noqa: E402
from mcptap.wire.textsafe import printable

KIND_COLOURS = {"request": "#1f77b4", "response": "#2ca02c", "error": "#d62728", "notification": "#9467bd",
                "batch": "#ff7f0e", "invalid": "#8c564b", "unparseable": "#7f7f7f"}
SEVERITY_COLOURS = {"error": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4"}
MAX_ARROWS = 200
"""A longer session is summarised: its first MAX_ARROWS messages from `first`, and how many
more there are."""
ROW_INCHES = 0.28
LABEL_CHARS = 48


def _label(row) -> str:
    method = row.method if isinstance(row.method, str) else ""
    ident = f" id={row.id}" if isinstance(row.id, str) else ""
    text = f"{row.kind} {method}{ident}".strip()
    return safe(text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…")


def safe(text: str) -> str:
    """Text from the traffic as matplotlib should draw it: control characters escaped, and `$`
    escaped so that a method name is never read as mathtext (which can fail to parse)."""
    return printable(str(text)).replace("$", r"\$")


def sequence(db: str | sqlite3.Connection, session: str, *, first: int = 1, limit: int = MAX_ARROWS) -> Figure:
    """The session as a sequence diagram: host (left) and server (right), one arrow per frame
    from `first` on (at most `limit`), coloured by kind, each request joined to its response by
    a bracket, findings marked on their frame."""
    msgs = data.messages(db, session=session, columns=["frame_seq", "idx", "direction", "kind", "id", "method",
                                                        "paired_frame", "latency_s"])
    msgs = msgs[msgs["idx"].isna() & (msgs["frame_seq"] >= first)]
    total = len(msgs)
    shown = msgs.head(limit)
    found = data.findings(db, session=session)
    found = found[found["frame_seq"].isin(shown["frame_seq"])]  # only the frames drawn are marked
    marks = found.groupby("frame_seq", observed=True)["code"].apply(lambda c: ", ".join(map(str, c))).to_dict() \
        if not found.empty else {}
    rows = max(len(shown), 1)
    fig = Figure(figsize=(10, 1.6 + ROW_INCHES * rows))
    ax = fig.add_subplot()
    ax.set_xlim(-0.75, 1.75)
    ax.set_ylim(rows + 0.5, -0.8)
    ax.axis("off")
    for x, name in ((0, "host (client)"), (1, "server")):
        ax.plot([x, x], [-0.3, rows + 0.3], color="#999999", linewidth=1)
        ax.text(x, -0.55, name, ha="center", va="center", fontsize=10, fontweight="bold")
    y_of = {}
    for y, row in enumerate(shown.itertuples(index=False)):
        y_of[row.frame_seq] = y
        start, end = (0, 1) if row.direction == "c2s" else (1, 0)
        colour = KIND_COLOURS.get(str(row.kind), "#333333")
        ax.annotate("", xy=(end, y), xytext=(start, y),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.2})
        ax.text(0.5, y - 0.12, _label(row), ha="center", va="bottom", fontsize=7, color=colour)
        ax.text(-0.08, y, str(row.frame_seq), ha="right", va="center", fontsize=6, color="#666666")
        if row.frame_seq in marks:
            ax.plot([end], [y], marker="X", color=SEVERITY_COLOURS["error"], markersize=7)
            ax.text(1.08 if end == 1 else -0.12, y, safe(marks[row.frame_seq][:40]), fontsize=6,
                    color=SEVERITY_COLOURS["error"], va="center", ha="left" if end == 1 else "right")
    for row in shown.itertuples(index=False):  # request -> response brackets, on the server side
        if row.kind == "request" and not pd.isna(row.paired_frame) and row.paired_frame in y_of:
            y0, y1 = y_of[row.frame_seq], y_of[row.paired_frame]
            ax.plot([1.03, 1.05, 1.05, 1.03], [y0, y0, y1, y1], color="#bbbbbb", linewidth=0.8)
    note = f"frames {first} on: {len(shown)} of {total} messages drawn" if total > len(shown) else \
        f"{total} messages"
    ax.set_title(safe(f"session {session}: {note}"), fontsize=9)
    return fig


def latency(db_or_messages, *, session: str | None = None) -> Figure:
    """Latency per method (ms, log scale): each request's time to its answer."""
    msgs = db_or_messages if isinstance(db_or_messages, pd.DataFrame) else data.messages(
        db_or_messages, session=session, columns=["kind", "method", "latency_s"])
    requests = msgs[(msgs["kind"] == "request") & msgs["latency_s"].notna()]
    methods = requests.groupby("method", observed=True)["latency_s"]
    names = [str(m) for m, _ in methods]
    values = [group.to_numpy() * 1e3 for _, group in methods]
    fig = Figure(figsize=(8, 0.9 + 0.35 * max(len(names), 1)))
    ax = fig.add_subplot()
    if values:
        ax.boxplot(values, orientation="horizontal", tick_labels=[safe(n) for n in names], showfliers=True)
        ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no answered requests", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("latency (ms)")
    ax.set_title("latency per method", fontsize=10)
    fig.tight_layout()
    return fig


def findings_timeline(db: str | sqlite3.Connection, *, session: str | None = None) -> Figure:
    """Each finding at the time of its frame, one row per code, coloured by severity."""
    found = data.findings(db, session=session)
    found = found[found["ts"].notna()]
    codes = sorted({str(c) for c in found["code"]})
    fig = Figure(figsize=(10, 1.2 + 0.3 * max(len(codes), 1)))
    ax = fig.add_subplot()
    if codes:
        row = {code: i for i, code in enumerate(codes)}
        for severity, group in found.groupby("severity", observed=True):
            ax.scatter(group["ts"], [row[str(c)] for c in group["code"]], s=14, label=str(severity),
                       color=SEVERITY_COLOURS.get(str(severity), "#333333"))
        ax.set_yticks(range(len(codes)), codes, fontsize=8)
        ax.legend(fontsize=8, loc="upper right")
    else:
        ax.text(0.5, 0.5, "no findings", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_title("findings over time", fontsize=10)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig
