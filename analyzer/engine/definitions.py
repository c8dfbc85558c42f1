"""The definitions each stored session's server declared (analyzer/analysis/definitions.py), read
from the store (only the frames that can hold them, filtered in SQLite), and a session's
definitions findings (against the policy's baseline, and its own earlier listings), which the job
stores beside its other findings."""

from __future__ import annotations

import sqlite3

from mcptap import store
from mcptap.analysis import cost, drift
from mcptap.analysis.definitions import NEEDLES, Declared, collect


def declared(db_path: str, ids: list[str] | None = None, *, results: bool = False) -> list[tuple[Declared, str | None]]:
    """(what the server declared, the session's label) for these sessions (default every one), in
    start order. `results`: every frame read, and each tools/call result kept."""
    conn = store.open_existing(db_path)
    try:
        return declared_in(conn, ids, results=results)
    finally:
        conn.close()


def declared_in(conn: sqlite3.Connection, ids: list[str] | None = None, *,
                results: bool = False) -> list[tuple[Declared, str | None]]:
    """`declared` over an open connection."""
    ids = store.session_ids(conn) if ids is None else ids
    out = []
    for sid in ids:
        label = store.get_session(conn, sid).get("label")
        frames = (((seq, direction, raw) for seq, _ts, direction, raw in store.iter_raw_frames(conn, sid))
                  if results else store.frames_mentioning(conn, sid, NEEDLES))
        out.append((collect(sid, frames, results=results), label))
    return out


def judge_session(conn: sqlite3.Connection, sid: str, policy=None) -> list[tuple]:
    """The definitions findings of one session: against the policy's baseline when it has one, and
    against the session's own earlier listings."""
    label = store.get_session(conn, sid).get("label")
    declared_here = collect(sid, store.frames_mentioning(conn, sid, NEEDLES))
    return drift.findings(declared_here, label, getattr(policy, "baseline", None), policy)


def cost_report(db: str | sqlite3.Connection, ids: list[str] | None = None) -> dict:
    """What each server and session costs in a model's context (analyzer/analysis/cost.py), every
    frame of these sessions read (default every session); `db` a path or an open connection."""
    found = declared_in(db, ids, results=True) if isinstance(db, sqlite3.Connection) else \
        declared(db, ids, results=True)
    return cost.report([(decl, drift.server_key(decl, label)) for decl, label in found])
