"""Benchmark of the fleet path: the same generated recordings (bench/analyze.py's generator: stdio
sessions, both eras, 0.5% injected violations; here 1,000 sessions to a million frames, of 200 to
about 2,900 frames each, written straight into --work and removed after) analysed three ways in
one run, for each size asked (default 1,000,000 and 10,000,000 frames):
(a) `mcptap analyze --db` (worker processes, one per CPU) over the SQLite file;
(b) `mcptap export --format parquet` of it, then `mcptap analyze DIR --engine spark --master
    local[2]` over the dataset;
(c) `mcptap analyze DIR --engine local --jobs 2` over the same dataset.
Each is a subprocess, timed wall to wall (start-up included). The derived rows of (b) and (c) are
checked equal to (a)'s (an order-free digest of every messages and findings row). Prints the
per-frame cost of each, how it grows from the smallest size to the largest, and, from (b)'s rate
per executor, how many executors a day of a fleet needs. Not a test: it always exits 0.

    python bench/fleet.py [--frames 1000000 10000000] [--seed 7] [--skip-spark]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from analyze import Generator  # noqa: E402
from common import print_summary, run  # noqa: E402

MESSAGES = ("session_id", "frame_seq", "idx", "direction", "kind", "id", "method", "paired_frame", "latency_s")
SESSIONS_PER_MILLION = 1_000
FINDINGS = ("session_id", "frame_seq", "idx", "code", "severity", "message", "related_frame")


def mcptap(*args: str, timeout: float = 7200) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mcptap", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=timeout)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mcptap {' '.join(args)}: exit {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def digest_rows(rows) -> tuple[int, str]:
    """An order-free digest: the count and the sum of each row's hash."""
    total, count = 0, 0
    for row in rows:
        total = (total + int.from_bytes(hashlib.blake2b(repr(tuple(row)).encode(), digest_size=8).digest())) % (1 << 64)
        count += 1
    return count, f"{total:016x}"


def sqlite_digest(db: str, table: str, columns: tuple) -> tuple[int, str]:
    conn = sqlite3.connect(db)
    try:
        return digest_rows(conn.execute(f"SELECT {', '.join(columns)} FROM {table}"))
    finally:
        conn.close()


def dataset_digest(folder: str, table: str, columns: tuple) -> tuple[int, str]:
    import pyarrow.dataset as ds

    data = ds.dataset(os.path.join(folder, table), partitioning="hive", exclude_invalid_files=False,
                      ignore_prefixes=[".", "_"])

    def rows():
        for batch in data.to_batches(columns=list(columns)):
            yield from zip(*(batch.column(c).to_pylist() for c in columns))

    return digest_rows(rows())


def phase(figures: dict, name: str, seconds: float) -> float:
    """A phase's time kept and printed at once (a run stopped half way still says what it measured)."""
    figures[f"{name}_s"] = seconds
    n = figures["frames"]
    print(f"    {name:8} {seconds:8.1f} s  {seconds / n * 1e6:6.2f} us/frame  (load {os.getloadavg()[0]:.2f})",
          flush=True)
    return seconds


def measure(n: int, seed: int, spark: bool, work: str) -> dict:
    db = os.path.join(work, f"fleet-{n}.db")
    folder = os.path.join(work, f"fleet-{n}")
    for path in (db, db + "-wal", db + "-shm"):
        if os.path.exists(path):
            os.unlink(path)
    shutil.rmtree(folder, ignore_errors=True)
    sessions = max(1, n * SESSIONS_PER_MILLION // 1_000_000)
    print(f"\n{n:,} frames, {sessions:,} sessions", flush=True)
    figures = {"frames": n, "sessions": sessions}
    started = time.perf_counter()
    Generator(n, seed, sessions).write(db)
    phase(figures, "generate", time.perf_counter() - started)
    phase(figures, "export", mcptap("export", "--format", "parquet", "-o", folder, db))
    phase(figures, "sqlite", mcptap("analyze", "--db", db, "--format", "json", "--fail-on", "never"))
    want = {t: sqlite_digest(db, t, c) for t, c in (("messages", MESSAGES), ("findings", FINDINGS))}
    engines = [("spark", ["--engine", "spark", "--master", "local[2]"])] if spark else []
    engines.append(("local", ["--engine", "local", "--jobs", "2"]))  # after Spark: its rate is the one sized on
    for name, args in engines:
        phase(figures, name, mcptap("analyze", folder, *args, "--format", "json", "--fail-on", "never"))
        got = {t: dataset_digest(folder, t, c) for t, c in (("messages", MESSAGES), ("findings", FINDINGS))}
        figures[f"{name}_same"] = got == want
        print(f"    {name} derived rows identical to --db: {'yes' if got == want else 'NO'}", flush=True)
    figures["rows"] = want
    for path in (db, db + "-wal", db + "-shm"):
        if os.path.exists(path):
            os.unlink(path)
    shutil.rmtree(folder, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--work", default=tempfile.gettempdir())
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}, cpus: {os.cpu_count()}", flush=True)
    results = []
    for n in args.frames:
        f = measure(n, args.seed, not args.skip_spark, args.work)
        results.append(f)
        print(f"\n{n:,} frames, {f['sessions']:,} sessions; rows {f['rows']}")
        for name in ("sqlite", "export", "local", "spark"):
            if f"{name}_s" in f:
                same = f.get(f"{name}_same")
                print(f"    {name:7} {f[f'{name}_s']:8.1f} s  {f[f'{name}_s'] / n * 1e6:6.2f} us/frame"
                      + ("" if same is None else f"  derived rows identical to --db: {'yes' if same else 'NO'}"))
    rows = []
    first, last = results[0], results[-1]
    for name in ("sqlite", "export", "local", "spark"):
        if f"{name}_s" in last:
            per = [r[f"{name}_s"] / r["frames"] * 1e6 for r in results]
            growth = per[-1] / per[0]
            rows.append((f"{name} us/frame at {last['frames']:,}", f"{per[-1]:.2f}",
                         f"x{growth:.2f} of {first['frames']:,}", ""))
    if "spark_s" in last:
        per_executor = last["frames"] / last["spark_s"] / 2  # local[2]: two executor cores
        day = 1_000 * 200_000  # a fleet of 1,000 hosts at 200,000 frames a day each
        needed = day / per_executor / 3600
        rows.append(("spark frames/s per executor core", f"{per_executor:,.0f}", "", ""))
        rows.append(("executor cores for 1,000 hosts x 200k frames/day in 1 h", f"{needed:.1f}", "", ""))
    print_summary(rows)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    run(main)
