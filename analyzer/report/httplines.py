"""The HTTP exchanges of a session that are no frames (the OAuth flow's discovery, registration,
authorization and token exchanges, a challenge's or an error's own body: `exchanges.role`) as
`mcptap show` and the HTML report give them: one line, one record or one table row each, in
time order among the frames."""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from mcptap import store
from mcptap.report import jsonout
from mcptap.wire.textsafe import printable

EXCHANGE = 2
"""Where an exchange sorts among frames (0) and stderr lines (1) of the same instant."""


def role_exchanges(conn: sqlite3.Connection, session_id: str) -> list[dict]:
    """The session's exchanges that carry a role, in the order they started."""
    return [row for row in store.session_exchanges(conn, session_id) if row.get("role")]


class ExchangeEntry(NamedTuple):
    """An exchange among a session's timeline entries (transcript.TimelineEntry): when it started,
    `source` EXCHANGE, its exchanges row."""

    ts: float
    source: int
    row: dict


def merged(entries: Iterable[tuple], exchanges: list[dict]) -> Iterator[tuple]:
    """`entries` (as transcript.timeline gives them) with an ExchangeEntry for each exchange."""
    if not exchanges:
        return iter(entries)
    return heapq.merge(entries, (ExchangeEntry(row["started_at"], EXCHANGE, row) for row in exchanges),
                       key=lambda e: (e.ts, e.source))


def is_exchange(entry: tuple) -> bool:
    return entry.source == EXCHANGE


def line(entry: tuple, t0: float | None) -> str:
    """An exchange's line of the transcript: offset, `http`, its role, status, method and URL."""
    ts, _, row = entry
    offset = f"{ts - t0:>+10.6f}" if t0 is not None else f"{'':>10}"
    status = row.get("status") if row.get("status") is not None else "-"
    size = len(row.get("response_body") or "")
    text = f"{'':>6}  {offset}  {'http':<6}  {size:>8}  {row['role']:<36}  {status!s:<14}  {row['method']} {row['url']}"
    if row.get("rewritten"):
        text += "  (rewritten for the client)"
    return printable(text)


def record(session_id: str, entry: tuple, t0: float | None) -> dict:
    """An exchange's record in `show --format json/jsonl`."""
    ts, _, row = entry
    rewritten = row.get("rewritten")
    try:
        rewritten = json.loads(rewritten) if rewritten else None
    except ValueError:
        pass
    return {"record": "exchange", "session": session_id, "id": row["id"], "ts": ts, "time": jsonout.iso(ts),
            "offset_s": round(ts - t0, 6) if t0 is not None else None, "role": row["role"], "method": row["method"],
            "url": row["url"], "status": row.get("status"), "request_body": row.get("request_body"),
            "response_body": row.get("response_body"), "rewritten": rewritten}
