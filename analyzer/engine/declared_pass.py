"""The definitions each stored session's server declared (analyzer/analysis/declared.py), read
from the store (only the frames that can hold them, filtered in SQLite), and a session's
definitions findings (against the policy's baseline, and its own earlier listings), which the job
stores beside its other findings."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from mcptap import store
from mcptap.analysis import cost, drift
from mcptap.analysis.declared import NEEDLES, WANTED, Declared, collect


def declared(db_path: str, ids: list[str] | None = None, *, results: bool = False) -> list[tuple[Declared, str | None]]:
    """(what the server declared, the session's label) for these sessions (default every one), in
    start order. `results`: each tools/call result kept too (the frames of the methods that matter
    when the session is analysed, else every frame read)."""
    conn = store.open_existing(db_path)
    try:
        return declared_in(conn, ids, results=results)
    finally:
        conn.close()


def declared_in(conn: sqlite3.Connection, ids: list[str] | None = None, *,
                results: bool = False) -> list[tuple[Declared, str | None]]:
    """`declared` over an open connection."""
    return list(each_declared(conn, ids, results=results))


def each_declared(conn: sqlite3.Connection, ids: list[str] | None = None, *,
                  results: bool = False) -> Iterator[tuple[Declared, str | None]]:
    """`declared_in`, one session at a time: a caller that sums them up (cost_report) holds one
    session's definitions at once, not every session's."""
    ids = store.session_ids(conn) if ids is None else ids
    for sid in ids:
        label = store.get_session(conn, sid).get("label")
        frames = store.frames_of_methods(conn, sid, sorted(WANTED if results else WANTED - {"tools/call"}))
        if frames is None:
            frames = (((seq, direction, raw) for seq, _ts, direction, raw in store.iter_raw_frames(conn, sid))
                      if results else store.frames_mentioning(conn, sid, NEEDLES))
        yield collect(sid, frames, results=results), label


def judge_session(conn: sqlite3.Connection, sid: str, policy=None, seqs: list[int] | None = None,
                  calls: list[int] | None = None, kept: list | None = None) -> list[tuple]:
    """The definitions findings of one session: against the policy's baseline when it has one, and
    against the session's own earlier listings. `seqs`, `calls`: the frames to read them from and
    its tools/call requests (from the analysis's message rows: `definitions.wanted`; the calls are
    read only when a tool changed), else every frame that may hold them. `kept`: a list that gets
    (what the session's last listings declared, its label) when it declared any, for its cost
    (`cost_of`) without reading its frames again."""
    if seqs is not None and not seqs:
        return []
    frames = store.frames_by_seq(conn, sid, seqs) if seqs is not None else store.frames_mentioning(conn, sid, NEEDLES)
    declared_here = collect(sid, frames)
    if not (declared_here.listings or declared_here.instructions is not None):
        return []
    label = store.get_session(conn, sid).get("label")
    if kept is not None:
        kept.append((Declared(sid, declared_here.name, declared_here.version, declared_here.instructions,
                              declared_here.instructions_seq, list(declared_here.latest().values())), label))
    baseline = getattr(policy, "baseline", None)
    found = drift.findings(declared_here, label, baseline, policy)
    if calls and any(f.code in CALLED for f in found):
        declared_here.calls = collect(sid, store.frames_by_seq(conn, sid, calls)).calls
        found = drift.findings(declared_here, label, baseline, policy)
    return found


CALLED = ("definition-changed", "definition-added")
"""The findings that name the calls that used a definition."""


def cost_report(db: str | sqlite3.Connection, ids: list[str] | None = None, *, results: bool = True) -> dict:
    """What each server and session costs in a model's context (analyzer/analysis/cost.py), for
    these sessions (default every session); `db` a path or an open connection. `results=False`:
    the definitions only (no tool result read: what analyze's JSON report carries)."""
    conn = db if isinstance(db, sqlite3.Connection) else store.open_existing(db)
    try:
        return cost_of(each_declared(conn, ids, results=results))
    finally:
        if conn is not db:
            conn.close()


def cost_of(declared: Iterable[tuple[Declared, str | None]]) -> dict:
    """`cost_report` of (what a session declared, its label) pairs, in start order: those an
    analysis kept (`judge_session`'s `kept`), or read from the store."""
    return cost.report((decl, drift.server_key(decl, label)) for decl, label in declared)
