"""Benchmark of `mcptap import` of a large frame-log JSONL. Not a test: it prints figures and
always exits 0.

The file. A seeded generator writes N frames (1,000,000: about 1 GB; --quick: 100,000) in the
product's own export format (analyzer/wire/framelog.py: `session_record` lines through `dumps`, then
each session's frames through `frame_line` and its stderr lines through `stderr_line`, exactly
what `mcptap export` and a recorder's spool write). Sessions of 2,000 to 50,000 frames
(log-uniform), each opened with initialize and closed by its session record; then tools/call
requests with arguments (a path, a query), progress notifications under the request's
`_meta.progressToken` (the word "token" makes the redactor look closer), and results whose text
runs from 100 B to 7 KB (log-uniform) of words, code, quotes, tabs, newlines and non-ASCII, so
the JSON strings hold escapes; tools/list answers with JSON schemas that have a `password`
property (a schema, not a secret: redaction must leave it); about 1% of the calls carry a real
credential member (`password`, `api_key`, `access_token`), which the import must redact. The
file is cached by its parameters in /tmp/mcptap-bench (--regenerate rebuilds it).

Measured in one run, the file first read through once so that every side finds it in the page
cache:
(a) Floor: in this process, the raw cost of storing the same rows: each line parsed with
    orjson and its frame row built, then `sqlite3` `executemany` of them into a new database
    made by the product's own schema (store.connect), in one transaction, nothing else (no
    redaction, no checks). The best of FLOOR_RUNS runs.
(b) `python -m mcptap import --db <new file> FILE` as a subprocess, started by bench/analyze.py's
    launcher (a process forked from a small launcher and reaped with wait4, so that its
    ru_maxrss is its own), VmHWM also sampled from /proc: frames/s over N (start-up included),
    CPU time, peak RSS, then the database checked: frame and stderr rows, sessions, the frames
    redaction changed (every injected credential) and that no secret is left in the file.
    Run on both sizes (--quick: the small only) to show that memory does not grow with the file.

Targets: (b) at least 100,000 frames/s and peak RSS under 200 MB on the 1 GB file, at most +25%
peak RSS from the small to the large file.

Usage:  python bench/import.py [--quick] [--regenerate] [--seed S] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import orjson  # noqa: E402

from mcptap import store

from mcptap.wire import framelog  # noqa: E402

from analyze import launched, make_corpus, warm  # noqa: E402  (bench/analyze.py)
from common import print_summary, run, verdict  # noqa: E402

CACHE_DIR = "/tmp/mcptap-bench"
GENERATOR_VERSION = 2  # bump when the generator changes: cached files are named after it
LARGE_N, SMALL_N = 1_000_000, 100_000
SESSION_MIN, SESSION_MAX = 2_000, 50_000
TEXT_MIN, TEXT_MAX = 100, 7_000
SECRET_SHARE = 0.01  # of tools/call requests
FLOOR_RUNS = 2
FLOOR_BATCH = 10_000

TARGET_FRAMES_PER_S = 100_000
TARGET_PEAK_RSS_MB = 200.0
TARGET_RSS_GROWTH = 0.25

SECRETS = ("password", "api_key", "access_token")
SECRET_MARK = "s3cr3t-"  # every injected secret starts with it: none may be left in the database

TOOLS = [
    {"name": "read_text_file", "description": "Read the complete contents of a file as text.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "integer"}},
                     "required": ["path"]}},
    {"name": "search_code", "description": "Search for code across repositories.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "sort": {"type": "string"}},
                     "required": ["q"]}},
    {"name": "connect_db", "description": "Open a connection to a database with the given credentials.",
     "inputSchema": {"type": "object", "properties": {"dsn": {"type": "string"},
                                                      "password": {"type": "string", "description": "the password"}},
                     "required": ["dsn"]}},
]
CLIENTS = (("claude-ai", "0.1.0"), ("Visual Studio Code", "1.104.0"), ("cursor-vscode", "1.0.0"), ("mcp", "1.21.0"))


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Generator:
    """Writes the frame-log file and counts what it holds."""

    def __init__(self, n: int, seed: int):
        self.n = n
        self.rng = random.Random(seed)
        self.corpus = make_corpus()
        self.stats = {"frames": 0, "sessions": 0, "stderr_lines": 0, "secrets": 0, "raw_bytes": 0}

    def text(self) -> str:
        rng = self.rng
        size = int(math.exp(rng.uniform(math.log(TEXT_MIN), math.log(TEXT_MAX))))
        start = rng.randrange(len(self.corpus) - size)
        return self.corpus[start:start + size]

    def session(self, sid: str, start: float, count: int) -> tuple[list[tuple], list[tuple], float]:
        """(frame rows, stderr rows, end time) of one session, rows as store.frame_row makes them."""
        rng = self.rng
        frames: list[tuple] = []
        t = start

        def emit(direction: str, raw: str) -> None:
            nonlocal t
            t += rng.random() * 0.004
            frames.append(store.frame_row(sid, len(frames) + 1, round(t, 6), direction, raw.encode("utf-8"), 0))

        client = rng.choice(CLIENTS)
        emit("c2s", compact({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": client[0], "version": client[1]}}}))
        emit("s2c", compact({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "bench-server", "version": "1.0.0"}}}))
        emit("c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}')
        rid = 1
        while len(frames) < count:
            r = rng.random()
            if r < 0.05:
                emit("c2s", compact({"jsonrpc": "2.0", "id": rid, "method": "tools/list"}))
                emit("s2c", compact({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}}))
            elif r < 0.10:
                emit("s2c", compact({"jsonrpc": "2.0", "method": "notifications/message",
                                     "params": {"level": "info", "logger": "bench", "data": self.text()[:300]}}))
                rid -= 1
            else:
                tool = rng.choice(TOOLS)["name"]
                args: dict = {"path": f"/home/me/projects/src/module_{rng.randrange(1000)}.py"} \
                    if tool == "read_text_file" else {"q": self.text()[:80]}
                if rng.random() < SECRET_SHARE:
                    args[rng.choice(SECRETS)] = f"{SECRET_MARK}{rng.getrandbits(64):016x}"
                    self.stats["secrets"] += 1
                emit("c2s", compact({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                     "params": {"name": tool, "arguments": args, "_meta": {"progressToken": rid}}}))
                if rng.random() < 0.3:
                    emit("s2c", compact({"jsonrpc": "2.0", "method": "notifications/progress",
                                         "params": {"progressToken": rid, "progress": 1, "total": 2}}))
                emit("s2c", compact({"jsonrpc": "2.0", "id": rid, "result": {
                    "content": [{"type": "text", "text": self.text()}], "isError": False}}))
            rid += 1
        del frames[count:]
        stderr = [store.stderr_row(sid, 1, start + 0.001, b"Secure MCP Server running on stdio", 0)]
        return frames, stderr, t + 0.01

    def write(self, path: str) -> dict:
        rng, st = self.rng, self.stats
        lo, hi = math.log(SESSION_MIN), math.log(SESSION_MAX)
        start = 1_780_000_000.0
        total = 0
        with open(path, "w", encoding="utf-8") as out:
            while total < self.n:
                count = int(math.exp(rng.uniform(lo, hi)))
                if self.n - total - count < SESSION_MIN:
                    count = self.n - total
                sid = f"bench-{st['sessions']:04d}"
                frames, stderr, end = self.session(sid, start, count)
                row = {"id": sid, "transport": "stdio", "label": "bench", "started_at": start, "ended_at": end,
                       "command": '["npx","-y","bench-server"]', "exit_status": 0,
                       "recorder": "bench/import.py generator", "host": "bench", "pid": 4242}
                out.write(framelog.dumps(framelog.session_record(row)) + "\n")
                out.write("\n".join(framelog.frame_line(f) for f in frames) + "\n")
                out.write("\n".join(framelog.stderr_line(e) for e in stderr) + "\n")
                st["raw_bytes"] += sum(f[5] for f in frames)
                total += len(frames)
                st["sessions"] += 1
                st["stderr_lines"] += len(stderr)
                start = end + rng.random() * 600
        st["frames"] = total
        st["file_bytes"] = os.path.getsize(path)
        return st


def ensure_file(n: int, seed: int, regenerate: bool) -> tuple[str, dict, float | None]:
    """The cached frame-log for (n, seed), generated if missing: (path, composition, seconds or None)."""
    base = os.path.join(CACHE_DIR, f"import-g{GENERATOR_VERSION}-{n}-{seed}")
    path, side = base + ".jsonl", base + ".json"
    if not regenerate and os.path.exists(path) and os.path.exists(side):
        with open(side, encoding="utf-8") as fh:
            return path, json.load(fh), None
    os.makedirs(CACHE_DIR, exist_ok=True)
    t0 = time.perf_counter()
    stats = Generator(n, seed).write(path + ".partial")
    elapsed = time.perf_counter() - t0
    os.replace(path + ".partial", path)
    with open(side, "w", encoding="utf-8") as fh:
        json.dump(stats, fh, indent=1, sort_keys=True)
    return path, stats, elapsed


# -- (a) the floor: orjson and executemany of the same rows -------------------------------------

def floor(path: str, tmp: str) -> dict:
    """Each line parsed with orjson, its frame row built, `executemany` into a new database made by
    the product's schema, one transaction, then COMMIT (its checkpoint included): nothing else."""
    db = os.path.join(tmp, "floor.db")
    store.connect(db).close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    loads, sql = orjson.loads, store._INSERT_FRAME
    t0, c0 = time.perf_counter(), time.process_time()
    conn.execute("BEGIN IMMEDIATE")
    rows, n = [], 0
    with open(path, "rb") as fh:
        for line in fh:
            o = loads(line)
            if "direction" not in o:
                continue
            raw = o["raw"]
            rows.append((o["session"], o["seq"], o["ts"], o["direction"], raw, len(raw.encode()), 0, None))
            if len(rows) == FLOOR_BATCH:
                conn.executemany(sql, rows)
                n += len(rows)
                rows = []
    conn.executemany(sql, rows)
    n += len(rows)
    conn.execute("COMMIT")
    conn.close()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    return {"n": n, "s": elapsed, "cpu_s": cpu, "rate": n / elapsed}


# -- (b) mcptap import --------------------------------------------------------------------------

def run_import(path: str, tmp: str, comp: dict) -> dict:
    db = os.path.join(tmp, "import.db")
    stats_path, out_path, err_path = db + ".stats", db + ".out", db + ".err"
    argv = [sys.executable, "-m", "mcptap", "import", "--db", db, path]
    os.sync()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        run = launched(argv, stats_path, out, err)
    n = comp["frames"]
    peaks = run["peaks_kb"]
    r = {"n": n, **{k: run[k] for k in ("s", "status", "cpu_s", "wait4_mb")},
         "sampled_mb": max(peaks.values(), default=0) / 1024, "sum_mb": sum(peaks.values()) / 1024,
         "processes": len(peaks)}
    r["rate"] = n / r["s"] if r["s"] else float("inf")
    r["peak_mb"] = max(r["wait4_mb"], r["sampled_mb"])
    with open(err_path, encoding="utf-8", errors="replace") as fh:
        r["stderr"] = fh.read().strip()
    if r["status"] == 0:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            r["frames"] = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
            r["stderr_lines"] = conn.execute("SELECT count(*) FROM stderr_lines").fetchone()[0]
            r["sessions"] = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            r["redacted"] = conn.execute("SELECT count(*) FROM frames WHERE redacted IS NOT NULL").fetchone()[0]
            r["secrets_left"] = conn.execute("SELECT count(*) FROM frames WHERE instr(CAST(raw AS BLOB), ?) > 0",
                                             (SECRET_MARK.encode(),)).fetchone()[0]
            r["text_rows"] = conn.execute("SELECT count(*) FROM frames WHERE typeof(raw) = 'text'").fetchone()[0]
        finally:
            conn.close()
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    return r


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 frames only")
    parser.add_argument("--regenerate", action="store_true", help="rebuild the cached files")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    args = parser.parse_args(argv)
    sizes = [SMALL_N] if args.quick else [SMALL_N, LARGE_N]
    print(f"mcptap import benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()} on "
          f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs")
    print(f"    uptime: {uptime()}")
    files = {}
    rows: list[tuple[str, str, str, str]] = []
    for n in sizes:
        path, comp, gen_s = ensure_file(n, args.seed, args.regenerate)
        files[n] = (path, comp)
        how = f"generated in {gen_s:.1f} s" if gen_s is not None else "cached"
        print(f"\n[file] {n:,} frames, {comp['sessions']} sessions, {comp['secrets']:,} credentials, "
              f"{comp['file_bytes'] / 1e9:.2f} GB ({comp['raw_bytes'] / comp['frames']:.0f} B per frame); {how}: {path}")
    os.makedirs(CACHE_DIR, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="import-run-", dir=CACHE_DIR)
    results = {}
    try:
        for n in sizes:
            path, comp = files[n]
            print(f"\n[{n:,} frames]")
            warm(path)
            f = min((floor(path, tmp) for _ in range(FLOOR_RUNS)), key=lambda x: x["s"])
            print(f"    (a) floor (orjson + sqlite3 executemany, one transaction): {f['rate']:>9,.0f} frames/s "
                  f"({f['s']:.2f} s, CPU {f['cpu_s']:.2f} s, best of {FLOOR_RUNS})   uptime: {uptime()}")
            r = run_import(path, tmp, comp)
            if r["status"] != 0:
                print(f"    (b) mcptap import: exit {r['status']}: {r['stderr'][-2000:]}")
            else:
                print(f"    (b) mcptap import: {r['rate']:>9,.0f} frames/s ({r['s']:.2f} s wall, start-up included; CPU "
                      f"{r['cpu_s']:.2f} s = {r['cpu_s'] / n * 1e6:.1f} us/frame); {r['rate'] / f['rate']:.2f}x the floor"
                      f"   uptime: {uptime()}")
                print(f"        peak RSS {r['peak_mb']:.1f} MB, the largest process (wait4 {r['wait4_mb']:.1f}, sampled "
                      f"{r['sampled_mb']:.1f}); sum of the peaks of its {r['processes']} processes {r['sum_mb']:.1f} MB")
                print(f"        stored: {r['frames']:,} frames ({r['text_rows']:,} as TEXT), {r['stderr_lines']:,} stderr lines, "
                      f"{r['sessions']:,} sessions; {r['redacted']:,} frames redacted (credentials injected: "
                      f"{comp['secrets']:,}); frames still holding a secret: {r['secrets_left']:,}")
            results[n] = (f, r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for n in sizes:
        f, r = results[n]
        tag = f" ({n // 1000:,}k)"
        big = n == sizes[-1]
        rows.append(("floor frames/s" + tag, f"{f['rate']:,.0f}", "(baseline)", ""))
        if r["status"] != 0:
            rows.append(("import" + tag, f"exit {r['status']}", "exit 0", "MISS"))
            continue
        rows.append(("import frames/s" + tag, f"{r['rate']:,.0f}", f">= {TARGET_FRAMES_PER_S:,}" if big else "(info)",
                     verdict(r["rate"] >= TARGET_FRAMES_PER_S) if big else ""))
        rows.append(("import vs floor" + tag, f"{r['rate'] / f['rate']:.2f}x", "(info)", ""))
        rows.append(("import peak RSS" + tag, f"{r['peak_mb']:.1f} MB", f"< {TARGET_PEAK_RSS_MB:.0f} MB",
                     verdict(r["peak_mb"] < TARGET_PEAK_RSS_MB)))
        ok = r["frames"] == n and r["secrets_left"] == 0 and r["redacted"] >= files[n][1]["secrets"]
        rows.append(("every frame stored, no secret left" + tag, "yes" if ok else "NO", "yes", verdict(ok)))
    if len(sizes) > 1 and all(results[n][1]["status"] == 0 for n in sizes):
        small, large = results[sizes[0]][1]["peak_mb"], results[sizes[-1]][1]["peak_mb"]
        growth = (large - small) / small if small else float("inf")
        rows.append((f"peak RSS growth {sizes[0] // 1000}k -> {sizes[-1] // 1000:,}k", f"{growth:+.0%}",
                     f"<= +{TARGET_RSS_GROWTH:.0%}", verdict(growth <= TARGET_RSS_GROWTH)))
    rows.append(("driver peak RSS", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB", "(info)", ""))
    print_summary(rows)
    print(f"    uptime: {uptime()}")
    return 0


if __name__ == "__main__":
    run(main)
