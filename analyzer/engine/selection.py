"""The frames a display filter selects (analyzer/store/filterlang.py), for `show`, `export`,
`analyze` and mcptap.data: the filter parsed first (a bad one fails before any work), the sessions
not analysed yet analysed and stored (the filter's kind, method, id, latency and finding fields
are the analysis's), then the filter run as SQL over the store."""

from __future__ import annotations

from mcptap import store
from mcptap.store import filterlang, filtersql


def select(db: str, text: str, sessions: list[str] | None = None) -> dict[str, set[int]]:
    """{session id: the seqs of its frames the filter selects} of these sessions (None: all)."""
    from mcptap.engine import analyze

    tree = filterlang.parse(text)
    conn = store.open_existing(db)
    try:
        ids = list(sessions) if sessions is not None else store.session_ids(conn)
        done = set(store.analysis_summaries(conn)) if store.has_table(conn, "analyses") else set()
    finally:
        conn.close()
    missing = [sid for sid in ids if sid not in done]
    if missing:
        analyze(db, sessions=missing)
    conn = store.open_existing(db)
    try:
        out: dict[str, set[int]] = {}
        for sid, seq in filtersql.frames(conn, tree, list(sessions) if sessions is not None else None):
            out.setdefault(sid, set()).add(seq)
        return out
    finally:
        conn.close()
