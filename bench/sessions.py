"""Benchmark of many tiny sessions (issue 15, item 8): `mcptap import` of N one-frame sessions,
`mcptap analyze` (the table) of T of them and `mcptap report` of R of them. Not a test: it
prints figures and always exits 0.

The file: N sessions in the product's own export format (framelog.py `session_record` and
`frame_record` through `dumps`), each one request nobody answers (a warning), every tenth one
that is not JSON (an error); cached by its parameters in /tmp/mcptap-bench. Each command runs
as a subprocess of bench/analyze.py's launcher (its own ru_maxrss; VmHWM also sampled), from the
code tree given by --tree (default: this one; give a checkout of an older commit to compare),
and prints wall and CPU seconds, peak RSS and the lines it printed, beside `uptime`.

Targets: import of 1,000,000 sessions under 200 MB; the table of 100,000 sessions a screenful;
the report of 2,000 sessions in seconds of CPU.

Usage:  python bench/sessions.py [--sessions N] [--table T] [--report R] [--tree DIR] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from mcptap.wire import framelog  # noqa: E402

from analyze import launched  # noqa: E402  (bench/analyze.py)
from common import print_summary, run, verdict  # noqa: E402
import trees  # noqa: E402  (bench/trees.py)

CACHE_DIR = "/tmp/mcptap-bench"
GENERATOR_VERSION = 1
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_IMPORT_MB = 200.0


def ensure_file(n: int) -> str:
    os.makedirs(CACHE_DIR, exist_ok=True)
    path = os.path.join(CACHE_DIR, f"tiny-sessions-v{GENERATOR_VERSION}-{n}.jsonl")
    if os.path.exists(path):
        return path
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as fh:
        for i in range(n):
            sid = f"s{i:07d}"
            start = 1764460800.0 + i * 0.01
            fh.write(framelog.dumps(framelog.session_record({"id": sid, "transport": "stdio", "label": "tiny",
                                                             "started_at": start})) + "\n")
            raw = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' + ("" if i % 10 else "}")
            fh.write(framelog.dumps(framelog.frame_record(sid, 1, start + 0.001, "c2s", raw.encode())) + "\n")
    os.replace(partial, path)
    return path


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def measured(argv: list[str], tree: str, tmp: str, name: str) -> dict:
    """Run `argv` from `tree` under the launcher: wall s, CPU s, peak MB, status, output lines."""
    stats, out_path = os.path.join(tmp, name + ".stats"), os.path.join(tmp, name + ".out")
    env = trees.pythonpath(tree)
    with open(out_path, "wb") as out:
        run = launched(argv, stats, out, subprocess.STDOUT, cwd=tree, env=env)
    with open(out_path, "rb") as fh:
        lines = fh.read().count(b"\n")
    peak = max(run["wait4_mb"], max(run["peaks_kb"].values(), default=0) / 1024)
    r = {"s": run["s"], "cpu_s": run["cpu_s"], "peak_mb": peak, "status": run["status"], "lines": lines}
    print(f"  {name}: {r['s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, peak {peak:.0f} MB, exit {r['status']}, "
          f"{lines:,} lines printed   [{uptime()}]", flush=True)
    return r


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1_000_000, help="sessions imported (default 1,000,000)")
    parser.add_argument("--table", type=int, default=100_000, help="sessions analysed as a table (default 100,000)")
    parser.add_argument("--report", type=int, default=2_000, help="sessions in the HTML report (default 2,000)")
    parser.add_argument("--tree", default=HERE, help="the code tree to run (default: this one)")
    parser.add_argument("--quick", action="store_true", help="100,000 / 10,000 / 500 sessions")
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.table, args.report = 100_000, 10_000, 500
    tree = os.path.abspath(args.tree)
    print(f"many tiny sessions, code from {tree}   [{uptime()}]", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcptap-sessions-") as tmp:
        cli = [sys.executable, "-m", "mcptap"]
        big = ensure_file(args.sessions)
        db = os.path.join(tmp, "import.db")
        r = measured([*cli, "import", "--db", db, big], tree, tmp, f"import of {args.sessions:,} sessions")
        rows.append((f"import {args.sessions:,}: peak RSS", f"{r['peak_mb']:.0f} MB", f"< {TARGET_IMPORT_MB:.0f} MB",
                     verdict(r["peak_mb"] < TARGET_IMPORT_MB and r["status"] == 0)))
        rows.append((f"import {args.sessions:,}: wall / CPU", f"{r['s']:.1f} / {r['cpu_s']:.1f} s", "", ""))
        rows.append((f"import {args.sessions:,}: lines printed", f"{r['lines']:,}", "a screenful", verdict(r["lines"] < 60)))
        os.unlink(db)
        for n, what in ((args.table, "table"), (args.report, "report")):
            db = os.path.join(tmp, f"{what}.db")
            measured([*cli, "import", "--db", db, ensure_file(n)], tree, tmp, f"import of {n:,} sessions")
            if what == "table":
                r = measured([*cli, "analyze", "--db", db, "--fail-on", "never"], tree, tmp,
                             f"analyze (table) of {n:,} sessions")
                rows.append((f"analyze table {n:,}: wall / CPU", f"{r['s']:.1f} / {r['cpu_s']:.1f} s", "", ""))
                rows.append((f"analyze table {n:,}: peak RSS", f"{r['peak_mb']:.0f} MB", "", ""))
                rows.append((f"analyze table {n:,}: lines", f"{r['lines']:,}", "a screenful", verdict(r["lines"] < 100)))
            else:
                measured([*cli, "analyze", "--db", db, "--fail-on", "never", "--format", "jsonl"], tree, tmp,
                         f"analyze of {n:,} sessions (before the report)")
                r = measured([*cli, "report", "--db", db, "-o", os.path.join(tmp, "r.html")], tree, tmp,
                             f"report of {n:,} sessions")
                rows.append((f"report {n:,}: wall / CPU", f"{r['s']:.1f} / {r['cpu_s']:.1f} s", "", ""))
                rows.append((f"report {n:,}: peak RSS", f"{r['peak_mb']:.0f} MB", "", ""))
            os.unlink(db)
    print_summary(rows)


if __name__ == "__main__":
    run(main)
