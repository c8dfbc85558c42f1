"""Benchmark of `mcptap tui` against `mcptap view` on the same million-frame database. Not a test:
it prints figures and always exits 0.

The database is bench/view.py's (bench/analyze.py's generated frames, analysed once, cached in
/tmp/mcptap-bench). Measured in one run, RUNS times each, interleaved:
(a) the terminal UI: `mcptap tui --db DB` started in a real pseudo-terminal of 160x50, the seconds
    until the status line of its first rows (`frame 1 of N`, written with them) reaches the
    terminal; then `q`, and the seconds until it has quit;
(b) the viewer: `mcptap view` started (seconds until it prints its URL), then the page in headless
    Chromium from navigation to the first rows painted (bench/view.py `first_rows`, one load).
The figure is the ratio of (a) over (b)'s start-to-URL plus navigation-to-rows: "the same time
class" is a ratio at most 2.

Usage:  python bench/tui.py [--frames N]   (default 1,000,000)
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time

from common import ROOT, frames_parser, in_chromium, print_summary, run, uptime, verdict  # first: the root on sys.path
import view as view_bench
from tests.support import browser
from tests.support.terminal import Terminal

RUNS = 3
TARGET_RATIO = 2.0
DRAWN = b"frame 1 of "
SIZE = (50, 160)  # rows, columns


def tui_once(db: str) -> dict:
    """`mcptap tui` in a pseudo-terminal: seconds to its first rows drawn, and to quitting on q."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with Terminal([sys.executable, "-m", "mcptap", "tui", "--db", db], {**env, "TERM": "xterm-256color"},
                  size=SIZE, cwd=ROOT) as term:
        drawn = term.until(DRAWN, 600)
        total = re.search(rb"frame 1 of ([0-9,]+)", term.seen[term.seen.index(DRAWN):] + b" ")
        t1 = time.perf_counter()
        term.type(b"q")
        term.exit_code(60)
        return {"drawn_s": drawn, "quit_s": time.perf_counter() - t1, "rows": total.group(1).decode() if total else "?"}


def view_once(db: str) -> dict:
    with view_bench.running_view(db) as (url, started), browser.chromium() as driver:
        rows = view_bench.first_rows(driver, url)
    return {"url_s": started, "rows_s": rows, "total_s": started + rows}


def main() -> None:
    args = frames_parser(__doc__, 1_000_000).parse_args()
    if not in_chromium("mcptap tui against mcptap view"):
        return
    db = view_bench.database(args.frames)
    tui, view = [], []
    for _ in range(RUNS):
        tui.append(tui_once(db))
        view.append(view_once(db))
    t = statistics.median(r["drawn_s"] for r in tui)
    v = statistics.median(r["total_s"] for r in view)
    ratio = t / v
    print(f"frames: {tui[0]['rows']}")
    print("each run (tui drawn, view URL + rows): "
          + ", ".join(f"{a['drawn_s']:.2f} s / {b['url_s']:.2f} + {b['rows_s']:.2f} s" for a, b in zip(tui, view)))
    print_summary([
        ("tui: start to first rows drawn (median)", f"{t:.2f} s", "", ""),
        ("tui: q to quit (median)", f"{statistics.median(r['quit_s'] for r in tui):.2f} s", "", ""),
        ("view: start to URL + navigation to first rows (median)", f"{v:.2f} s", "", ""),
        ("tui / view", f"{ratio:.2f}x", f"<= {TARGET_RATIO:.1f}x", verdict(ratio <= TARGET_RATIO)),
    ])
    print(f"load after: {uptime()}")


if __name__ == "__main__":
    run(main)
