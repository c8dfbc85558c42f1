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
per-frame cost of each (wall, and CPU of the command's process tree), how it grows from the
smallest size to the largest, and, from (b)'s rate per executor core, how many executor cores a
day of a fleet needs (--hosts hosts recording --host-frames frames a day each). Not a test: it always exits 0.

    python bench/fleet.py [--frames 1000000 10000000] [--seed 7] [--skip-spark] [--hosts 1000 --host-frames 200000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from analyze import Generator  # noqa: E402
from common import print_summary, run  # noqa: E402

MESSAGES = ("session_id", "frame_seq", "idx", "direction", "kind", "id", "method", "paired_frame", "latency_s")
SESSIONS_PER_MILLION = 1_000
FINDINGS = ("session_id", "frame_seq", "idx", "code", "severity", "message", "related_frame")


class TreeCPU(threading.Thread):
    """The CPU seconds (user + system) of a process and everything under it, read from /proc
    every INTERVAL seconds (Spark's JVM is never waited for by the driver, so the driver's
    RUSAGE_CHILDREN misses it and its Python workers); each process counted by its last sample."""

    INTERVAL = 0.25

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.seen, self.done = pid, {}, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.INTERVAL)

    def sample(self) -> None:
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                stats[int(name)] = (int(fields[1]), fields[19], int(fields[11]) + int(fields[12]))
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        todo = [self.pid]
        while todo:
            pid = todo.pop()
            if pid in stats:
                self.seen[(pid, stats[pid][1])] = stats[pid][2]
            todo.extend(children.get(pid, ()))

    def seconds(self) -> float:
        self.done.set()
        return sum(self.seen.values()) / os.sysconf("SC_CLK_TCK")


def mcptap(*args: str, timeout: float = 7200) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, of the command and every process under it:
    Spark's JVM and its Python workers too) of one mcptap command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mcptap", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    tree = TreeCPU(proc.pid)
    tree.start()
    _, err = proc.communicate(timeout=timeout)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"mcptap {' '.join(args)}: exit {proc.returncode}: {err.decode()[-2000:]}")
    waited = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, max(waited, tree.seconds())  # each misses some: what was not waited for, the last tick


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


def phase(figures: dict, name: str, seconds: float | tuple[float, float]) -> None:
    """A phase's wall (and CPU) time kept and printed at once (a run stopped half way still says
    what it measured)."""
    wall, cpu = seconds if isinstance(seconds, tuple) else (seconds, None)
    figures[f"{name}_s"] = wall
    n = figures["frames"]
    used = ""
    if cpu is not None:
        figures[f"{name}_cpu"] = cpu
        used = f"  cpu {cpu:8.1f} s  {cpu / n * 1e6:6.2f} us/frame"
    print(f"    {name:8} {wall:8.1f} s  {wall / n * 1e6:6.2f} us/frame{used}  (load {os.getloadavg()[0]:.2f})",
          flush=True)


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
    parser.add_argument("--hosts", type=int, default=1_000, help="fleet size for the executors estimate")
    parser.add_argument("--host-frames", type=int, default=200_000, help="frames a host records a day")
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
        if all(f"{name}_cpu" in r for r in (first, last)):
            cpu = [r[f"{name}_cpu"] / r["frames"] * 1e6 for r in (first, last)]
            rows.append((f"{name} CPU us/frame at {last['frames']:,}", f"{cpu[-1]:.2f}",
                         f"x{cpu[-1] / cpu[0]:.2f} of {first['frames']:,}", ""))
    if "spark_s" in last:
        day = args.hosts * args.host_frames
        wall_rate = last["frames"] / last["spark_s"] / 2  # local[2]: two executor cores
        rows.append(("spark frames/s per executor core (wall, local[2])", f"{wall_rate:,.0f}", "", ""))
        rows.append((f"cores for {args.hosts:,} hosts x {args.host_frames:,} frames/day, 1 h a day",
                     f"{day / wall_rate / 3600:.1f}", "", ""))
        if "spark_cpu" in last:
            cpu_rate = last["frames"] / last["spark_cpu"]  # the driver's JVM counted in: an upper bound
            rows.append(("spark frames per CPU second (JVM and Python workers)", f"{cpu_rate:,.0f}", "", ""))
            rows.append((f"cores for {args.hosts:,} hosts x {args.host_frames:,} frames/day, 1 h a day (CPU)",
                         f"{day / cpu_rate / 3600:.1f}", "", ""))
    print_summary(rows)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    run(main)
