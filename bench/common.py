"""What the benchmarks share: the PASS/MISS verdict, the closing summary table, running `main` so
that a benchmark reports and never fails its caller (exit status 0), the machine's load, the
opening line of a benchmark in headless Chromium, its --frames argument, and bench/analyze.py's generated databases
analysed once and cached beside them. Importing it puts the repository's root on sys.path (for
`tests.support`)."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)

HEADER = ("figure", "value", "target", "")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_summary(rows: list[tuple[str, str, str, str]]) -> None:
    print("\nsummary")
    widths = [max(len(r[i]) for r in rows + [HEADER]) for i in range(4)]
    for r in [HEADER] + rows:
        print("    " + "  ".join(c.ljust(w) if i != 1 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def run(main: Callable[[], object]) -> None:
    try:
        main()
    except Exception:  # a benchmark reports, it does not fail the caller
        traceback.print_exc()
    sys.exit(0)


def frames_parser(doc: str, default: int) -> argparse.ArgumentParser:
    """The benchmark's arguments, described by its docstring's first line: --frames N."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--frames", type=int, default=default)
    return parser


def uptime() -> str:
    """`uptime`'s line (the load averages), or the load averages alone."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def in_chromium(title: str) -> bool:
    """Prints the benchmark's first line (`title`, Python, CPUs, load); whether headless Chromium
    is there to measure in (when not, says why)."""
    from tests.support import browser

    why = browser.missing()
    if why:
        print(f"cannot measure: {why}")
        return False
    print(f"{title}: {platform.python_version()}, {os.cpu_count()} CPUs; {uptime()}")
    return True


def analysed(n: int, seed: int, name: str) -> str:
    """bench/analyze.py's generated database of n frames (seed), analysed once with `mcptap
    analyze` and cached beside it as `name` (again when the generated one is newer)."""
    import analyze as analyze_bench  # the generator and its cache

    src, _, _ = analyze_bench.ensure_database(n, seed, False)
    path = os.path.join(analyze_bench.CACHE_DIR, name)
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(src):
        tmp = path + ".tmp"
        shutil.copyfile(src, tmp)
        subprocess.run([sys.executable, "-m", "mcptap", "analyze", "--db", tmp, "--format", "json",
                        "--fail-on", "never", "-o", os.devnull], check=True, cwd=ROOT)
        os.replace(tmp, path)
    return path
