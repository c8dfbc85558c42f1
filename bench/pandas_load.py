"""Benchmark of the pandas API (analyzer/data.py): time and peak RSS to load the messages and
findings of 1,000,000 frames. Not a test: it prints figures and always exits 0.

The database is bench/analyze.py's realistic recording (generated and cached there), analysed
once with `mcptap analyze` and cached beside it. Each measurement runs in a fresh process
(`python -c ...`) reaped with os.wait4, so its peak RSS is its own: interpreter and pandas import
included, reported apart. Measured: `messages()` (all columns, the frames' times joined),
`findings()`, `frames()` without text, and `messages()` of one session; best of RUNS.
Targets: messages and findings of the whole file under 5 s and under 1 GB.

Usage:  python bench/pandas_load.py [--quick]   (--quick: the 100,000-frame database)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze as analyze_bench  # noqa: E402  (the generator and its cache)

from common import ROOT, analysed, print_summary, run, verdict  # noqa: E402

RUNS = 3
TARGET_S = 5.0
TARGET_MB = 1024.0

CODE = """
import json, sys, time
t0 = time.perf_counter()
import mcptap.data as mt
imported = time.perf_counter() - t0
db, what = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if what == "messages+findings":
    m = mt.messages(db); f = mt.findings(db); rows = len(m) + len(f)
elif what == "frames":
    rows = len(mt.frames(db))
elif what == "one session":
    sid = mt.sessions(db).sort_values("frames").iloc[-1]["id"]
    rows = len(mt.messages(db, session=sid))
else:
    rows = 0
print(json.dumps({"s": time.perf_counter() - t0, "import_s": imported, "rows": rows}))
"""


def analysed_database(n: int) -> str:
    return analysed(n, 1, f"pandas-{n}.db")


def measure(db: str, what: str) -> dict:
    best = None
    for _ in range(RUNS):
        proc = subprocess.Popen([sys.executable, "-c", CODE, db, what], stdout=subprocess.PIPE, cwd=ROOT)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.stdout.close()
        result = json.loads(out)
        result["peak_mb"] = usage.ru_maxrss / 1024
        if best is None or result["s"] < best["s"]:
            best = result
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 100,000-frame database")
    args = parser.parse_args(argv)
    n = analyze_bench.SMALL_N if args.quick else analyze_bench.LARGE_N
    print(f"pandas API benchmark: Python {platform.python_version()} on {platform.system()}, "
          f"{os.cpu_count()} CPUs; database of {n:,} frames")
    db = analysed_database(n)
    baseline = measure(db, "nothing")
    print(f"    interpreter and `import mcptap.data` (pandas): {baseline['import_s']:.2f} s, "
          f"{baseline['peak_mb']:.0f} MB peak")
    rows = []
    for what in ("messages+findings", "frames", "one session"):
        r = measure(db, what)
        print(f"    {what:<18} {r['rows']:>10,} rows in {r['s']:.2f} s, peak RSS {r['peak_mb']:.0f} MB")
        if what == "messages+findings":
            rows.append((f"messages + findings of {n:,} frames: time", f"{r['s']:.2f} s", f"< {TARGET_S:.0f} s",
                         verdict(r["s"] < TARGET_S)))
            rows.append((f"messages + findings of {n:,} frames: peak RSS", f"{r['peak_mb']:.0f} MB",
                         f"< {TARGET_MB:.0f} MB", verdict(r["peak_mb"] < TARGET_MB)))
        else:
            rows.append((f"{what}: time", f"{r['s']:.2f} s", "(info)", ""))
    print_summary(rows)
    return 0


if __name__ == "__main__":
    run(main)
