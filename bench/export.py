"""Benchmark of `mcptap export` in each format that holds a database's sessions (frame-log JSONL,
OTLP JSON) and gzip-compressed, on bench/analyze.py's seeded databases (cached in
/tmp/mcptap-bench: 100,000 frames, and 1,000,000 unless --quick). Not a test: it prints figures
and always exits 0.

Each export runs as `python -m mcptap export --db DB --format F -o FILE` under bench/analyze.py's
launcher (wait4's peak RSS of the process alone, and CPU and wall time): frames/s over the
database's frames (start-up included), peak RSS, and the output's size; on both sizes, to show
that memory does not grow with the database (an export holds one session's analysis at a time,
never the file).

Targets: peak RSS at most +25% from the small to the large database for every format.

Usage:  python bench/export.py [--quick] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import tempfile

from analyze import LARGE_N, SMALL_N, ensure_database, launched, warm  # noqa: E402  (bench/analyze.py)
from common import print_summary, run, verdict  # noqa: E402

FORMATS = (("jsonl", ".jsonl"), ("jsonl", ".jsonl.gz"), ("otlp", ".otlp.jsonl"))
TARGET_RSS_GROWTH = 0.25


def export_once(db: str, n: int, fmt: str, suffix: str, tmp: str) -> dict:
    out = os.path.join(tmp, f"export-{n}{suffix}")
    argv = ["-m", "mcptap", "export", "--db", db, "--format", fmt, "-o", out]
    import sys

    with open(os.devnull, "wb") as null:
        stats = launched([sys.executable, *argv], os.path.join(tmp, "stats"), null, null)
    size = os.path.getsize(out) if os.path.exists(out) else 0
    if os.path.exists(out):
        os.unlink(out)
    return {"rate": n / stats["s"] if stats["s"] else 0.0, "rss_mb": stats["wait4_mb"], "size_mb": size / 1e6,
            "status": stats["status"], "s": stats["s"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small database only")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = [SMALL_N] if args.quick else [SMALL_N, LARGE_N]
    results: dict[tuple, dict] = {}
    with tempfile.TemporaryDirectory(prefix="mcptap-bench-export-") as tmp:
        for n in sizes:
            db, _comp, _gen = ensure_database(n, args.seed, False)
            warm(db)
            for fmt, suffix in FORMATS:
                r = results[(n, fmt, suffix)] = export_once(db, n, fmt, suffix, tmp)
                print(f"{n:>9,} frames  {fmt:<5} {suffix:<12} {r['rate']:>10,.0f} frames/s  peak RSS "
                      f"{r['rss_mb']:6.1f} MB  output {r['size_mb']:8.1f} MB  exit {r['status']}")
    rows = []
    for fmt, suffix in FORMATS:
        small = results[(SMALL_N, fmt, suffix)]
        rows.append((f"{fmt}{suffix} frames/s ({SMALL_N:,})", f"{small['rate']:,.0f}", "", ""))
        if not args.quick:
            large = results[(LARGE_N, fmt, suffix)]
            growth = large["rss_mb"] / small["rss_mb"] - 1 if small["rss_mb"] else float("inf")
            rows.append((f"{fmt}{suffix} frames/s ({LARGE_N:,})", f"{large['rate']:,.0f}", "", ""))
            rows.append((f"{fmt}{suffix} peak RSS growth", f"{growth:+.0%}", f"<= +{TARGET_RSS_GROWTH:.0%}",
                         verdict(growth <= TARGET_RSS_GROWTH)))
    print_summary(rows)
    return 0


if __name__ == "__main__":
    run(main)
