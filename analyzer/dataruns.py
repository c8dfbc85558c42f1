"""`mcptap.data.runs`: the runs of a database as a DataFrame (the pandas API, analyzer/data.py)."""

from __future__ import annotations

import sqlite3

import pandas as pd

from mcptap import store


def runs(db: str | sqlite3.Connection) -> pd.DataFrame:
    """One row per run (the sessions one host process started, or one HTTP client's within a
    window): run, started_at, ended_at, sessions, frames, errors, warnings (of the analysed
    sessions), client (a dict: the host process, or the HTTP client), host_app (the host
    application's name, as `mcptap wrap` wrote it: claude-desktop, cursor...; None when unsaid),
    host (who started the run, in a line: "cursor (pid 1234, node)") and servers (a list). The
    sessions of a run: `sessions(db)[sessions(db)["run"] == run]`."""
    import json

    from mcptap.report import runview
    from mcptap.store import runlist

    conn = store.open_existing(db) if not isinstance(db, sqlite3.Connection) else db
    try:
        rows = runlist.runs(conn)
    finally:
        if conn is not db:
            conn.close()
    frame = pd.DataFrame(rows, columns=["run", "started_at", "ended_at", "sessions", "frames", "errors", "warnings",
                                        "client", "servers"])
    for column in ("started_at", "ended_at"):
        frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    for column in ("sessions", "frames", "errors", "warnings"):
        frame[column] = frame[column].astype("Int64")
    frame["client"] = [json.loads(c) if c else None for c in frame["client"]]
    frame.insert(len(frame.columns), "host_app", [c.get("host_app") if isinstance(c, dict) else None for c in frame["client"]])
    frame.insert(len(frame.columns), "host", [runview.host_text(c) for c in frame["client"]])
    frame["servers"] = [runview.server_list(s) for s in frame["servers"]]
    return frame
