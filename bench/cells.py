"""What checking cell types costs (analyzer/store/cells.py) on bench/analyze.py's database: the cheap
check every reader makes up front, the full check a failed read makes, and a plain scan of the
frames for scale, each the best of three, in the same run.

    python bench/cells.py [--quick]"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analyze as bench_analyze  # noqa: E402 - bench/analyze.py, beside this file
from common import print_summary, run  # noqa: E402

from mcptap.store import cells  # noqa: E402


def best(fn, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 frames only")
    args = parser.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    db, _, _ = bench_analyze.ensure_database(n, 1, False)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    frames = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    print(f"{frames:,} frames in {db} ({os.path.getsize(db) / 1e6:,.0f} MB)")
    print("uptime:", os.popen("uptime").read().strip())
    scan = best(lambda: conn.execute("SELECT count(*), sum(length(raw)) FROM frames").fetchone())
    cheap = best(lambda: cells.check_cheap(conn))
    full = best(lambda: cells.check(conn, tables=cells.RECORDED))
    print("uptime:", os.popen("uptime").read().strip())
    rows = [("plain scan of the frames", f"{scan:.3f} s", "", ""),
            ("cheap check (every reader, up front)", f"{cheap:.3f} s", "", f"{cheap / scan:.2f}x the scan"),
            ("full check (after a failed read)", f"{full:.3f} s", "", f"{full / scan:.2f}x the scan")]
    print_summary(rows)


if __name__ == "__main__":
    run(main)
