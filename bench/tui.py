"""Benchmark of `mcptap tui` against `mcptap view` on the same million-frame database. Not a test:
it prints figures and always exits 0.

The database is bench/view.py's (bench/analyze.py's generated frames, analysed once, cached in
/tmp/mcptap-bench). Measured in one run, RUNS times each, interleaved:
(a) the terminal UI: a fresh process that opens the database in Textual's headless pilot (the same
    application `mcptap tui` runs, 160x50) and reports the seconds from the process's start to the
    first rows in the frame list, and from the application's start to them;
(b) the viewer: `mcptap view` started (seconds until it prints its URL), then the page in headless
    Chromium from navigation to the first rows painted (bench/view.py `in_browser`, one load).
The figure is the ratio of (a)'s process start to first rows over (b)'s start-to-URL plus
navigation-to-rows: "the same time class" is a ratio at most 2.

Usage:  python bench/tui.py [--frames N]   (default 1,000,000)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
import view as view_bench  # noqa: E402

from common import print_summary, run, verdict  # noqa: E402
from tests.support import browser  # noqa: E402

RUNS = 3
TARGET_RATIO = 2.0
PILOT = """
import asyncio, json, sys, time
t0 = time.perf_counter()
from mcptap.tui.app import TapApp
from textual.widgets import DataTable
async def main():
    app = TapApp(sys.argv[1])
    started = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        while app.query_one("#frames", DataTable).row_count == 0:
            await pilot.pause(0.01)
        now = time.perf_counter()
        print(json.dumps({"process_s": now - t0, "app_s": now - started, "rows": app.total}))
asyncio.run(main())
"""


def tui_once(db: str) -> dict:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PILOT, db], capture_output=True, text=True, cwd=ROOT, timeout=600)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    got = json.loads(done.stdout.strip().splitlines()[-1])
    got["wall_s"] = wall
    return got


def view_once(db: str) -> dict:
    proc, url, started = view_bench.start_view(db)
    try:
        with browser.chromium() as driver:
            t0 = time.perf_counter()
            driver.get(url)
            browser.wait_for(lambda: driver.execute_script(view_bench.ROWS_PAINTED), timeout=120, what="the first rows")
            rows = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(30)
    return {"url_s": started, "rows_s": rows, "total_s": started + rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    args = parser.parse_args()
    why = browser.missing()
    if why:
        print(f"cannot measure: {why}")
        return
    print(f"mcptap tui against mcptap view: {platform.python_version()}, {os.cpu_count()} CPUs; {view_bench.uptime()}")
    db = view_bench.analysed(args.frames)
    tui, view = [], []
    for _ in range(RUNS):
        tui.append(tui_once(db))
        view.append(view_once(db))
    t = statistics.median(r["process_s"] for r in tui)
    v = statistics.median(r["total_s"] for r in view)
    ratio = t / v
    print(f"frames: {tui[0]['rows']:,}")
    print_summary([
        ("tui: process start to first rows (median)", f"{t:.2f} s", "", ""),
        ("tui: application start to first rows (median)", f"{statistics.median(r['app_s'] for r in tui):.2f} s", "", ""),
        ("view: start to URL + navigation to first rows (median)", f"{v:.2f} s", "", ""),
        ("tui / view", f"{ratio:.2f}x", f"<= {TARGET_RATIO:.1f}x", verdict(ratio <= TARGET_RATIO)),
    ])
    print(f"load after: {view_bench.uptime()}")


if __name__ == "__main__":
    run(main)
