"""Which session a reference names, one rule for a SQLite file and a Parquet dataset alike: the
session with that id; else the one session whose id starts with it (more than one: an error
listing them); else the newest session with that label; else SessionNotFound. Every command,
mcptap.data and the dataset reads resolve session references here."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from os import PathLike

from mcptap.errors import SessionNotFound

Candidate = tuple[str, str | None, float | None]
"""(id, label, started_at) of a session the reference could name."""


def pick(ref: str, candidates: Iterable[Candidate]) -> str:
    """The session `ref` names among the sessions whose id starts with it or whose label it is."""
    rows = [r for r in candidates if isinstance(r[0], str)]  # an id cell of another type names nothing
    if any(sid == ref for sid, _, _ in rows):
        return ref
    by_prefix = [r[0] for r in sorted((r for r in rows if r[0].startswith(ref)), key=_when)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if by_prefix:
        shown = ", ".join(by_prefix[:5])
        raise SessionNotFound(f"{ref!r} matches {len(by_prefix)} sessions ({shown}); give more of the id")
    labelled = [r for r in rows if r[1] == ref]
    if labelled:
        return max(labelled, key=_when)[0]
    raise SessionNotFound(f"no session {ref!r} (try `mcptap sessions`)")


def _when(row: Candidate) -> tuple:
    """Start order, as SQLite's ORDER BY started_at, id puts them (no start first)."""
    return (row[2] is not None, row[2] or 0.0, row[0])


def resolve_session(conn: sqlite3.Connection, ref: str) -> str:
    """The id of the session of the SQLite file that `ref` names (its id, a unique id prefix, or
    its label: the newest with that label)."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (ref,)).fetchone():
        return ref
    return pick(ref, conn.execute("SELECT id, label, started_at FROM sessions WHERE substr(id, 1, ?) = ? OR label = ?",
                                  (len(ref), ref, ref)))


def resolve_sessions(source: sqlite3.Connection | str | PathLike, session: str | Sequence[str] | None) -> list[str] | None:
    """The ids of the sessions `session` names (one reference or several, each resolved as
    `pick` says; each session once, in the order named) in a SQLite file (an open connection)
    or a Parquet dataset (its folder); None when `session` is None (every session)."""
    if session is None:
        return None
    refs = [session] if isinstance(session, str) else list(session)
    if isinstance(source, sqlite3.Connection):
        return list(dict.fromkeys(resolve_session(source, ref) for ref in refs))
    return list(dict.fromkeys(_in_dataset(source, refs)))


def _in_dataset(root, refs: list[str]) -> Iterable[str]:
    import pyarrow.compute as pc

    from mcptap.store import dataset

    table = dataset.read(dataset.check(root), "sessions", columns=["id", "label", "started_at"])
    for ref in refs:
        near = table.filter(pc.or_kleene(pc.starts_with(table.column("id"), ref), pc.equal(table.column("label"), ref)))
        yield pick(ref, zip(*(near.column(c).to_pylist() for c in ("id", "label", "started_at"))))
