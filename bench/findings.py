"""Benchmark of the reports on a session full of one systematic violation. Not a test: it prints
figures and always exits 0.

The database: one stdio session, built through the product's own store (mcptap.store:
connect, insert_session, insert_frames), whose server declares no capabilities at all and then
sends N `notifications/message` (default 200,000): each one is a `capability-not-negotiated`
warning (a server that logs without declaring `logging`), so nearly every frame has a finding.
It is cached by its size in /tmp/mcptap-bench (--regenerate rebuilds it).

Measured, each as a subprocess under /usr/bin/time -v (wall time, CPU time (user + system: less
at the mercy of a shared machine's load than wall time) and peak RSS), `uptime` printed beside
every figure, output to a file in the same folder (its size and line count printed):
  mcptap analyze                        the table report (the default)
  mcptap analyze --format json          every finding, streamed
  mcptap analyze --format jsonl         every finding, one per line
  mcptap show SESSION                   the transcript
  mcptap show SESSION --format jsonl    every frame with its findings
The json run is the baseline: the table's CPU time as a ratio of it is printed too. A command this
checkout does not have (exit status 2) is reported as such.

Targets: the table report within 1.5x of the json report's CPU time (both are the analysis of
the session, then a report of it), and under 10 s; peak RSS of the table report under 500 MB.

Usage:  python bench/findings.py [--frames N] [--regenerate] [--product DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_summary, run, verdict  # noqa: E402
import trees  # noqa: E402  (bench/trees.py)

CACHE = "/tmp/mcptap-bench"
SESSION = "findings"


def build(path: str, frames: int) -> None:
    """The database: a handshake with no server capabilities, then `frames` log notifications."""
    from mcptap import store

    tmp = path + ".tmp"
    for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    conn = store.connect(tmp)
    t0 = 1_764_460_800.0
    handshake = [
        ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "bench", "version": "1"}}}),
        ("s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                        "serverInfo": {"name": "noisy", "version": "1"}}}),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    rows = [(i + 1, t0 + i * 0.0001, d, json.dumps(m, separators=(",", ":")).encode(), 0)
            for i, (d, m) in enumerate(handshake)]
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": SESSION, "transport": "stdio", "label": "noisy-logger", "started_at": t0,
                                    "ended_at": t0 + frames * 0.0001 + 1, "exit_status": 0,
                                    "command": json.dumps(["noisy-logger"])})
        store.insert_frames(conn, SESSION, rows)
        batch = []
        for n in range(frames):
            seq = len(handshake) + n + 1
            raw = (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"app",'
                   b'"data":"request %d handled in %d ms"}}' % (n, n % 97))
            batch.append((seq, t0 + seq * 0.0001, "s2c", raw, 0))
            if len(batch) == 10_000:
                store.insert_frames(conn, SESSION, batch)
                batch = []
        store.insert_frames(conn, SESSION, batch)
    conn.close()
    os.replace(tmp, path)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(name: str, args: list[str], out_path: str, product: str = HERE) -> dict:
    """One command under /usr/bin/time -v, the code of `product` (a checkout: bench/trees.py):
    wall and CPU seconds, peak RSS in MiB, exit status, output."""
    with open(out_path, "wb") as out:
        proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "mcptap", *args], stdout=out,
                              stderr=subprocess.PIPE, cwd=product, env=trees.pythonpath(product))
    text = proc.stderr.decode("utf-8", "replace")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    status = re.search(r"Exit status: (\d+)", text)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", text))
    seconds = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else float("nan")
    size = os.path.getsize(out_path)
    with open(out_path, "rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    figure = {"name": name, "seconds": seconds, "cpu": cpu, "rss_mib": int(rss.group(1)) / 1024 if rss else float("nan"),
              "status": int(status.group(1)) if status else proc.returncode, "bytes": size, "lines": lines,
              "uptime": uptime()}
    own = [line for line in text.splitlines() if line.startswith("mcptap")]
    state = "not in this checkout" if figure["status"] == 2 else f"exit {figure['status']}"
    print(f"{name:<24} {seconds:7.2f} s wall {cpu:7.2f} s CPU  {figure['rss_mib']:6.1f} MiB peak  "
          f"{size / 2**20:6.1f} MiB out  "
          f"{lines:>9,} lines  {state}   [{figure['uptime']}]")
    for line in own[:2]:
        print(f"    {line}")
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--product", default=HERE, metavar="DIR",
                        help="the checkout whose mcptap to measure (another commit's, for a before/after)")
    opts = parser.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    db = os.path.join(CACHE, f"findings-{opts.frames}.db")
    if opts.regenerate or not os.path.exists(db):
        started = time.perf_counter()
        build(db, opts.frames)
        print(f"built {db}: {opts.frames + 3:,} frames in {time.perf_counter() - started:.1f} s")
    print(f"database {db} ({os.path.getsize(db) / 2**20:.1f} MiB); {os.cpu_count()} CPUs; mcptap from "
          f"{opts.product}; {uptime()}\n")
    runs = [
        ("analyze --format json", ["analyze", "--db", db, "--format", "json", "--fail-on", "never"], "json"),
        ("analyze (table)", ["analyze", "--db", db, "--fail-on", "never"], "table.txt"),
        ("analyze --format jsonl", ["analyze", "--db", db, "--format", "jsonl", "--fail-on", "never"], "jsonl"),
        ("show (transcript)", ["show", "--db", db, SESSION], "show.txt"),
        ("show --format jsonl", ["show", "--db", db, SESSION, "--format", "jsonl"], "show.jsonl"),
    ]
    figures = {}
    for name, args, suffix in runs:
        figures[name] = measure(name, args, os.path.join(CACHE, f"findings-{opts.frames}.out.{suffix}"), opts.product)
    json_run, table = figures["analyze --format json"], figures["analyze (table)"]
    ratio = table["cpu"] / json_run["cpu"]
    print(f"\ntable / json CPU time: {ratio:.2f}x   [{uptime()}]")
    print_summary([
        ("table report, wall s", f"{table['seconds']:.2f}", "< 10", verdict(table["seconds"] < 10)),
        ("table report, CPU s", f"{table['cpu']:.2f}", "", ""),
        ("table / json CPU time", f"{ratio:.2f}x", "<= 1.5x", verdict(ratio <= 1.5)),
        ("table report, peak RSS MiB", f"{table['rss_mib']:.0f}", "< 500", verdict(table["rss_mib"] < 500)),
        ("json report, wall s", f"{json_run['seconds']:.2f}", "", ""),
        ("json report, CPU s", f"{json_run['cpu']:.2f}", "", ""),
        ("json report, peak RSS MiB", f"{json_run['rss_mib']:.0f}", "", ""),
    ])


if __name__ == "__main__":
    run(main)
