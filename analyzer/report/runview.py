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

RUN_HEAD = ("run", "started", "sessions", "frames", "errors", "warnings", "host", "servers")
ARROW = {"c2s": "→", "s2c": "←"}


def host_text(client) -> str:
    """Who started a run, in a line: the host application, its process id and program
    ("cursor (pid 1234, node)"; "node (pid 1234)" when the command line did not name the
    application), or the HTTP client's address and User-Agent."""
    if not isinstance(client, dict):
        return printable(str(client)) if client else ""
    if "address" in client:
        return printable(" ".join(str(v) for v in (client.get("address"), client.get("user_agent")) if v))
    app, exe, pid = client.get("host_app"), client.get("exe"), client.get("pid")
    inside = ", ".join(str(v) for v in (f"pid {pid}" if pid else None, exe if app else None) if v)
    head = app or exe
    return printable(f"{head} ({inside})" if head and inside else str(head or inside))


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
    errors, warnings, client (the first session's cell: the host process, or the HTTP client),
    host_app (the host application's name, when the command line said it), host (who started it,
    in a line: `host_text`), servers."""
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
                    "host_app": client.get("host_app") if isinstance(client, dict) else None, "host": host_text(client),
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
             r["host"],
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


def heading(run: dict) -> str:
    """The line above a run's timeline: its handle, start, who started it and its servers."""
    return printable(f"run {run['handle'] or run['run']}  {(run['started'] or '')[:19].replace('T', ' ')}  "
                     f"host {run['host'] or '-'}  servers {', '.join(run['servers'])}")


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
