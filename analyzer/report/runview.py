"""Runs for people and programs: the run list (`mcptap runs`) and one run's timeline (`mcptap show
--run`): every session's frames merged in time order, each line naming its server (the session's
label, or its command), so that what an agent did across all its servers reads top to bottom."""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterator
from typing import IO

from mcptap.report import columns, jsonout
from mcptap.store import handles, runlist
from mcptap.wire.textsafe import printable

RUN_HEAD = ("run", "started", "sessions", "frames", "errors", "warnings", "client", "servers")
ARROW = {"c2s": "→", "s2c": "←"}


def _client_text(cell: str | None) -> str:
    try:
        client = json.loads(cell) if cell else {}
    except ValueError:
        return printable(cell or "")
    if not isinstance(client, dict):
        return ""
    if "address" in client:
        return printable(" ".join(str(v) for v in (client.get("address"), client.get("user_agent")) if v))
    return printable(" ".join(str(v) for v in (client.get("exe"), f"pid {client['pid']}" if client.get("pid") else "")
                              if v))


def server_list(cell: str) -> list[str]:
    out = []
    for value in json.loads(cell or "[]"):
        try:
            argv = json.loads(value) if isinstance(value, str) and value.startswith("[") else None
        except ValueError:
            argv = None
        out.append(" ".join(map(str, argv)) if isinstance(argv, list) else str(value))
    return out


def run_objects(conn: sqlite3.Connection) -> list[dict]:
    """The runs as JSON objects: run, handle, started_at, started, ended_at, sessions, frames,
    errors, warnings, client, servers."""
    rows = runlist.runs(conn)
    short = handles([r["run"] for r in rows])
    out = []
    for r in rows:
        try:
            client = json.loads(r["client"]) if r["client"] else None
        except ValueError:
            client = r["client"]
        out.append({"run": r["run"], "handle": short.get(r["run"]), "started_at": r["started_at"],
                    "started": jsonout.iso(r["started_at"]), "ended_at": r["ended_at"], "sessions": r["sessions"],
                    "frames": r["frames"] or 0, "errors": r["errors"], "warnings": r["warnings"], "client": client,
                    "servers": server_list(r["servers"])})
    return out


def write_runs(out: IO[str], conn: sqlite3.Connection, fmt: str, *, terminal: bool, width: int | None) -> None:
    """The run list as a table, one JSON document, or JSON lines."""
    runs = run_objects(conn)
    if fmt == "json":
        out.write(jsonout.dumps({"runs": runs}) + "\n")
        return
    if fmt == "jsonl":
        out.writelines(jsonout.dumps(r) + "\n" for r in runs)
        return
    rows = [(r["handle"] or r["run"], (r["started"] or "")[:19].replace("T", " "), str(r["sessions"]),
             f"{r['frames']:,}", "-" if r["errors"] is None else str(r["errors"]),
             "-" if r["warnings"] is None else str(r["warnings"]),
             _client_text(json.dumps(r["client"]) if isinstance(r["client"], dict) else r["client"]),
             printable(", ".join(r["servers"]))) for r in runs]
    if not rows:
        out.write("no runs: sessions recorded by `mcptap record` (one host process) or `mcptap proxy` "
                  "(one client) form runs\n")
        return
    columns.show(out, RUN_HEAD, rows, right={2, 3, 4, 5}, terminal=terminal, width=width)


def server_names(conn: sqlite3.Connection, sids: list[str]) -> dict[str, str]:
    """Each session's server as the timeline names it: its label, else its command's program, else
    its upstream; the same name twice gets the session's handle after it."""
    short = handles(sids)
    names = {}
    for sid, (label, command, upstream) in runlist.session_names(conn, sids).items():
        name = label
        if not name and command:
            try:
                argv = json.loads(command)
                name = " ".join(map(str, argv[-2:])) if isinstance(argv, list) else command
            except ValueError:
                name = command
        names[sid] = printable(name or upstream or short[sid])
    seen: dict[str, int] = {}
    for name in names.values():
        seen[name] = seen.get(name, 0) + 1
    return {sid: f"{name} ({short[sid]})" if seen[name] > 1 else name for sid, name in names.items()}


def timeline(conn: sqlite3.Connection, sids: list[str]) -> Iterator[dict]:
    """Every frame record (report/transcript.py `records`) of these sessions, merged in time order,
    each with `server` (see server_names)."""
    from mcptap.report import transcript

    names = server_names(conn, sids)

    def of(sid: str):
        _, _, frames = transcript.records(conn, sid, stderr=False)
        for rec in frames:
            rec["server"] = names[sid]
            yield rec["ts"], rec["session"], rec["seq"], rec

    for _, _, _, rec in heapq.merge(*(of(sid) for sid in sids)):
        yield rec


def timeline_lines(conn: sqlite3.Connection, sids: list[str], width: int | None) -> Iterator[str]:
    """The timeline as text: offset from the run's start, server, direction, kind, method, id,
    latency, and the findings' codes."""
    names = server_names(conn, sids)
    lane = max((len(n) for n in names.values()), default=6)
    lane = min(lane, 28)
    t0 = None
    for rec in timeline(conn, sids):
        t0 = rec["ts"] if t0 is None else t0
        latency = rec.get("latency_s")
        codes = sorted({f["code"] for f in rec.get("findings") or []})
        parts = [f"{rec['ts'] - t0:10.3f}s", columns.cut(rec["server"], lane).ljust(lane),
                 ARROW.get(rec.get("direction"), "?"), f"{rec['seq']:>5}", printable(str(rec.get("kind") or "")),
                 printable(str(rec.get("method") or "")), f"id {printable(str(rec['id']))}" if rec.get("id") is not None else "",
                 f"{latency * 1000:.1f} ms" if latency is not None else "", " ".join(f"[{c}]" for c in codes)]
        line = "  ".join(p for p in parts if p)
        yield columns.cut(line, width) if width else line
