"""Benchmark of the exports in each format, on bench/analyze.py's seeded databases (cached in
/tmp/mcptap-bench: 100,000 frames, and 1,000,000 unless --quick). Not a test: it prints figures
and always exits 0.

Each export runs as a command of its own under bench/analyze.py's launcher (wait4's peak RSS of
the process alone, and CPU and wall time): frames/s over the database's frames (start-up
included), peak RSS, and the output's size; on both sizes, to show that memory does not grow
with the database (an export holds one session's analysis at a time, never the file):
- `mcptap export --format F -o FILE` for the frames formats: jsonl (also .jsonl.gz), otlp
  (OTLP JSON: each session analysed in memory and paired), parquet (a dataset folder), and har
  on an HTTP copy of the database (HTTP_COPY: each client frame a POST exchange, the server's
  frames its JSON answer; cached beside the stdio one);
- `mcptap analyze --format F -o FILE` for the analysis formats whose writers stream (junit,
  sarif; on a copy of the database, since analyze stores its results): the analysis included.

Targets: peak RSS at most +25% from the small to the large database for every format.

Usage:  python bench/export.py [--quick] [--seed S] [--only FORMAT,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from analyze import CACHE_DIR, LARGE_N, SMALL_N, ensure_database, launched, warm  # noqa: E402  (bench/analyze.py)
from common import print_summary, run, verdict  # noqa: E402
from sessions import uptime  # noqa: E402

from mcptap import store

# (label, command, database: stdio or http, -o suffix)
FORMATS = (
    ("jsonl", "export", "stdio", ".jsonl"),
    ("jsonl", "export", "stdio", ".jsonl.gz"),
    ("otlp", "export", "stdio", ".otlp.jsonl"),
    ("parquet", "export", "stdio", "/"),
    ("har", "export", "http", ".har"),
    ("junit", "analyze", "stdio", ".xml"),
    ("sarif", "analyze", "stdio", ".sarif"),
)
TARGET_RSS_GROWTH = 0.25
BATCH = 20_000


def http_copy(src: str, n: int, seed: int) -> str:
    """The stdio database as HTTP sessions (cached): each client frame the body of a POST
    exchange of its own, each server frame in the answer of the latest one (application/json);
    made again when the stdio file is newer."""
    path = os.path.join(CACHE_DIR, f"export-http-{n}-{seed}.db")
    if os.path.exists(path) and os.path.getmtime(path) > os.path.getmtime(src):  # made from this very file
        return path
    tmp = path + ".partial"
    for p in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    t0 = time.perf_counter()
    reader, conn = store.open_existing(src), store.connect(tmp)
    headers = json.dumps([["content-type", "application/json"]])
    try:
        for s in store.list_sessions(reader):
            sid = s["id"]
            with store.write_transaction(conn):
                store.insert_session(conn, {"id": sid, "transport": "http", "label": s.get("label"),
                                            "started_at": s["started_at"], "ended_at": s.get("ended_at"),
                                            "upstream": "http://127.0.0.1:9/mcp"})
            rows, exchange = [], None
            for f in store.iter_frames(reader, sid):
                if f.direction == "c2s":
                    if exchange is not None:
                        store.insert_exchange(conn, exchange)
                    exchange = {"id": f"{sid}-{f.seq}", "session_id": sid, "method": "POST",
                                "url": "http://127.0.0.1:9/mcp", "status": 200, "request_type": "application/json",
                                "response_type": "application/json", "request_headers": headers,
                                "response_headers": headers, "started_at": f.ts, "request_end": f.ts,
                                "response_at": None, "ended_at": f.ts, "outcome": "complete"}
                elif exchange is not None:
                    if exchange["response_at"] is None:
                        exchange["response_at"] = f.ts
                    exchange["ended_at"] = f.ts
                rows.append(store.http_frame_row(sid, f.seq, f.ts, f.direction, f.raw,
                                                 exchange["id"] if exchange else None, None, int(f.incomplete)))
                if len(rows) >= BATCH:
                    with store.write_transaction(conn):
                        store.insert_http_frames(conn, rows)
                    rows = []
            with store.write_transaction(conn):
                store.insert_http_frames(conn, rows)
                if exchange is not None:
                    store.insert_exchange(conn, exchange)
    finally:
        reader.close()
        conn.close()
    os.replace(tmp, path)
    print(f"    (HTTP copy of {n:,} frames made in {time.perf_counter() - t0:.0f} s: {path})")
    return path


def export_once(db: str, n: int, label: str, command: str, suffix: str, tmp: str) -> dict:
    out = os.path.join(tmp, f"{label}-{n}{suffix.rstrip('/')}")
    target = db
    if command == "analyze":  # it stores its results: a copy, not the cached file
        target = os.path.join(tmp, "analysed.db")
        shutil.copyfile(db, target)
        argv = ["-m", "mcptap", "analyze", "--db", target, "--format", label, "--fail-on", "never", "-o", out]
    else:
        argv = ["-m", "mcptap", "export", "--db", db, "--format", label, "-o", out + ("/" if suffix == "/" else "")]
    with open(os.devnull, "wb") as null, open(os.path.join(tmp, "stderr"), "wb") as err:
        stats = launched([sys.executable, *argv], os.path.join(tmp, "stats"), null, err)
    size = _size(out)
    shutil.rmtree(out, ignore_errors=True) if os.path.isdir(out) else (os.path.exists(out) and os.unlink(out))
    if target != db:
        for p in (target, target + "-wal", target + "-shm"):
            if os.path.exists(p):
                os.unlink(p)
    if stats["status"]:
        with open(os.path.join(tmp, "stderr"), encoding="utf-8", errors="replace") as fh:
            print("        " + fh.read().strip()[-400:])
    return {"rate": n / stats["s"] if stats["s"] else 0.0, "rss_mb": stats["wait4_mb"], "size_mb": size / 1e6,
            "status": stats["status"], "s": stats["s"]}


def _size(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)
    return os.path.getsize(path) if os.path.exists(path) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small database only")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="formats to run, comma-separated: a name, or a name and "
                                                   "suffix (jsonl.jsonl.gz); default: all")
    args = parser.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    chosen = [f for f in FORMATS if not only or f[0] in only or f[0] + f[3] in only]
    sizes = [SMALL_N] if args.quick else [SMALL_N, LARGE_N]
    print(f"uptime: {uptime()}")
    results: dict[tuple, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mcptap-bench-export-") as tmp:
        for n in sizes:
            stdio, _comp, _gen = ensure_database(n, args.seed, False)
            dbs = {"stdio": stdio}
            if any(f[2] == "http" for f in chosen):
                dbs["http"] = http_copy(stdio, n, args.seed)
            for db in dbs.values():
                warm(db)
            for label, command, kind, suffix in chosen:
                r = results[(n, label, suffix)] = export_once(dbs[kind], n, label, command, suffix, tmp)
                print(f"{n:>9,} frames  {command} {label:<7} {suffix:<12} {r['rate']:>10,.0f} frames/s  peak RSS "
                      f"{r['rss_mb']:6.1f} MB  output {r['size_mb']:8.1f} MB  {r['s']:6.1f} s  exit {r['status']}",
                      flush=True)
    print(f"uptime: {uptime()}")
    rows = []
    for label, command, _kind, suffix in chosen:
        name = f"{command} {label} {suffix}"
        small = results[(SMALL_N, label, suffix)]
        rows.append((f"{name} frames/s ({SMALL_N:,})", f"{small['rate']:,.0f}", "", ""))
        if not args.quick:
            large = results[(LARGE_N, label, suffix)]
            growth = large["rss_mb"] / small["rss_mb"] - 1 if small["rss_mb"] else float("inf")
            rows.append((f"{name} frames/s ({LARGE_N:,})", f"{large['rate']:,.0f}", "", ""))
            rows.append((f"{name} peak RSS {small['rss_mb']:.0f} -> {large['rss_mb']:.0f} MB", f"{growth:+.0%}",
                         f"<= +{TARGET_RSS_GROWTH:.0%}", verdict(growth <= TARGET_RSS_GROWTH)))
    print_summary(rows)
    return 0


if __name__ == "__main__":
    run(main)
