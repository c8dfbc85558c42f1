"""A run's timeline as `mcptap view` answers it (analyzer/report/live.py, `?run=ID`): the frames of
every session of the run in a time window (relative to the run's start), or past a limit their
density in one set of slices, and the longest stretches in which none of its sessions has a frame.
Read from SQLite a session at a time through the same paged queries as a session's diagram."""

from __future__ import annotations

from mcptap.report.livedata import DENSITY_BUCKETS, IDLE_GAPS, WINDOW_MAX, LiveView
from mcptap.store import filterlang, filtersql, viewpages


def window(view: LiveView, rid: str, t_from: float, t_to: float, limit: int = WINDOW_MAX, text: str = "") -> dict:
    """The run's frames (every session's) between two times relative to its start, as `window`
    answers for a session: each row's `t` relative to its own session's start, as everywhere;
    past `limit` frames, the density of them all in one set of slices."""
    run = view.run_of.get(rid)
    if run is None:
        return {"rows": [], "every": 1, "total": 0}
    start = run["started_at"]
    limit = max(1, min(limit, WINDOW_MAX))
    sids = [sid for sid in run["sessions"] if sid in view.number]
    counts = [0] * DENSITY_BUCKETS
    for sid in sids:
        for k, c in enumerate(viewpages.time_histogram(view.conn(), sid, start + t_from, start + t_to, DENSITY_BUCKETS)):
            counts[k] += c
    total = sum(counts)
    if total > limit:
        hits = None
        if text.strip():
            try:
                tree = filterlang.parse(text)
                hits = [0] * DENSITY_BUCKETS
                for sid in sids:
                    for k, c in enumerate(filtersql.histogram(view.conn(), tree, sid, start + t_from, start + t_to,
                                                              DENSITY_BUCKETS)):
                        hits[k] += c
            except filterlang.FilterError:
                hits = None
        return {"rows": [], "every": 1, "total": total,
                "density": {"from": t_from, "to": t_to, "counts": counts, "hits": hits}}
    rows = []
    for sid in sids:
        session = view.sessions[view.number[sid]]
        ahead = session["started_at"] - start
        rows += view.arrows(sid, t_from - ahead, t_to - ahead, text)
    return {"rows": rows, "every": 1, "total": len(rows)}


def gaps(view: LiveView, rid: str) -> list:
    """The run's longest stretches in which none of its sessions has a frame, as [from, to]
    relative to its start: the stretches every session's own longest gaps (or its time before
    its first frame or after its last) share, the IDLE_GAPS longest."""
    run = view.run_of.get(rid)
    if run is None:
        return []
    start = run["started_at"]
    sessions = [view.sessions[view.number[sid]] for sid in run["sessions"] if sid in view.number]
    ends = [s["last_ts"] for s in sessions if s["last_ts"] is not None]
    if not ends:
        return []
    end = max(ends)
    shared = [(start, end)]
    for s in sessions:
        if s["first_ts"] is None:
            continue
        idle = [(start, s["first_ts"]), (s["last_ts"], end)] + viewpages.idle_gaps(view.conn(), s["id"], IDLE_GAPS)
        shared = [(max(a, c), min(b, d)) for a, b in shared for c, d in idle if max(a, c) < min(b, d)]
    shared.sort(key=lambda g: g[0] - g[1])
    return [[round(a - start, 6), round(b - start, 6)] for a, b in shared[:IDLE_GAPS]]
