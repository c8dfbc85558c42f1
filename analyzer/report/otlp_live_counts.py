"""The live telemetry's counts (analyzer/report/otlp_live.py: spans sent and dropped, frames
dropped, data points) into each session's row, `sessions.telemetry` (JSON): once at the end of a
recording (`store_counts`), and while it goes on (`CountsStore`, the sender thread's)."""

from __future__ import annotations

import json

from mcptap import store


def _write_counts(conn, counts: dict[str, dict[str, int]]) -> None:
    with store.write_transaction(conn):
        for sid, of_session in counts.items():
            store.set_telemetry(conn, sid, json.dumps(of_session, sort_keys=True))


def store_counts(db_path: str, counts: dict[str, dict[str, int]]) -> None:
    """Each session's counts into its row (sessions.telemetry)."""
    conn = store.connect(db_path)
    try:
        _write_counts(conn, counts)
    finally:
        conn.close()


class CountsStore:
    """The sender's store of the counts while recording (`LiveTelemetry(keep=...)`): each call
    writes each session's counts into its row through one connection, opened at the first call
    (a session whose row is not committed yet gets them at a later call)."""

    def __init__(self, db_path: str):
        self._db_path = db_path
        self._conn = None

    def __call__(self, counts: dict[str, dict[str, int]]) -> None:
        if self._conn is None:
            self._conn = store.connect(self._db_path)
        _write_counts(self._conn, counts)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
