"""Which session a reference names, one rule for a SQLite file and a Parquet dataset alike: the
session with that id; `@N`, the N-th newest (`@1` the newest); else the one session whose id
starts with it, else the one whose id ends with it (its handle: ids are time-ordered UUIDv7, so
sessions of one minute share their first characters and differ at the end, which `mcptap sessions`
shows as the shortest unique end, as git abbreviates); else the newest session with that label;
else SessionNotFound (or, when several ids start or end with it, an error listing them). Every
command, mcptap.data and the dataset reads resolve session references here."""

from __future__ import annotations

import bisect
import re
import sqlite3
from collections.abc import Iterable, Sequence
from os import PathLike

from mcptap.errors import SessionNotFound

Candidate = tuple[str, str | None, float | None]
"""(id, label, started_at) of a session the reference could name."""


HANDLE_MIN = 4
"""The fewest characters of a handle (and of an id's end that names a session)."""
NEWEST = re.compile(r"@([1-9][0-9]{0,8})")
"""`@1` the newest session, `@2` the one before, ..."""


def pick(ref: str, candidates: Iterable[Candidate]) -> str:
    """The session `ref` names among the sessions whose id starts or ends with it or whose label it is."""
    rows = [r for r in candidates if isinstance(r[0], str)]  # an id cell of another type names nothing
    if any(sid == ref for sid, _, _ in rows):
        return ref
    by_prefix = [r[0] for r in sorted((r for r in rows if r[0].startswith(ref)), key=_when)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    by_end = [r[0] for r in sorted((r for r in rows if len(ref) >= HANDLE_MIN and r[0].endswith(ref)), key=_when)]
    if not by_prefix and len(by_end) == 1:
        return by_end[0]
    if by_prefix or by_end:
        shown = ", ".join((by_prefix or by_end)[:5])
        raise SessionNotFound(f"{ref!r} matches {len(by_prefix or by_end)} sessions ({shown}); give more of the id")
    labelled = [r for r in rows if r[1] == ref]
    if labelled:
        return max(labelled, key=_when)[0]
    raise SessionNotFound(f"no session {ref!r} (try `mcptap sessions`)")


def nth_newest(ref: str, candidates: Iterable[Candidate]) -> str:
    """The session `@N` names: the N-th newest by start."""
    n = int(NEWEST.fullmatch(ref).group(1))
    rows = sorted((r for r in candidates if isinstance(r[0], str)), key=_when, reverse=True)
    if n > len(rows):
        raise SessionNotFound(f"no session {ref!r}: there are {len(rows)} (try `mcptap sessions`)")
    return rows[n - 1][0]


def handles(ids: Sequence[str]) -> dict[str, str]:
    """Each id's handle: its shortest end (HANDLE_MIN characters or more, not ending on a `-`)
    that no other id ends with and no id starts with, so that `pick` gives that id back for it;
    the whole id when there is none."""
    ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
    backwards = sorted(i[::-1] for i in ids)
    forwards = sorted(ids)
    out = {}
    for sid in ids:
        rev = sid[::-1]
        at = bisect.bisect_left(backwards, rev)
        shared = max((_common(rev, backwards[j]) for j in (at - 1, at + 1) if 0 <= j < len(backwards)), default=0)
        size = max(HANDLE_MIN, shared + 1)
        while size < len(sid) and (sid[-size] == "-" or _starts_one(forwards, sid[-size:])):
            size += 1
        out[sid] = sid[-size:] if size < len(sid) else sid
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _starts_one(forwards: list[str], text: str) -> bool:
    """Whether an id (of the sorted `forwards`) starts with `text`."""
    at = bisect.bisect_left(forwards, text)
    return at < len(forwards) and forwards[at].startswith(text)


def _when(row: Candidate) -> tuple:
    """Start order, as SQLite's ORDER BY started_at, id puts them (no start first)."""
    return (row[2] is not None, row[2] or 0.0, row[0])


def completions(conn: sqlite3.Connection, incomplete: str, newest: int = 9) -> list[str]:
    """What a SESSION argument could be, for shell completion: each session's handle and label,
    and `@1`..`@newest`, those starting with `incomplete`."""
    rows = [r for r in conn.execute("SELECT id, label, started_at FROM sessions") if isinstance(r[0], str)]
    named = handles([r[0] for r in rows])
    words = [*named.values(), *(r[1] for r in rows if isinstance(r[1], str) and r[1]),
             *(f"@{n}" for n in range(1, min(newest, len(rows)) + 1))]
    return [w for w in dict.fromkeys(words) if w.startswith(incomplete)]


def resolve_session(conn: sqlite3.Connection, ref: str) -> str:
    """The id of the session of the SQLite file that `ref` names (its id, a unique id prefix, or
    its label: the newest with that label)."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (ref,)).fetchone():
        return ref
    if NEWEST.fullmatch(ref):
        return nth_newest(ref, conn.execute("SELECT id, label, started_at FROM sessions"))
    return pick(ref, conn.execute("SELECT id, label, started_at FROM sessions WHERE substr(id, 1, ?) = ? "
                                  "OR substr(id, -?) = ? OR label = ?", (len(ref), ref, len(ref), ref, ref)))


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
        if NEWEST.fullmatch(ref):
            yield nth_newest(ref, zip(*(table.column(c).to_pylist() for c in ("id", "label", "started_at"))))
            continue
        ids = table.column("id")
        near = table.filter(pc.or_kleene(pc.or_kleene(pc.starts_with(ids, ref), pc.ends_with(ids, ref)),
                                         pc.equal(table.column("label"), ref)))
        yield pick(ref, zip(*(near.column(c).to_pylist() for c in ("id", "label", "started_at"))))
