"""Benchmark of the everyday commands' start-up on a small database. Not a test: it prints figures
and always exits 0.

In one run, interleaved (each round runs every command once, in turn, so that drift of a shared
machine hits them alike), the wall time from spawn to exit of:
  python -c pass, python -c "import sqlite3" (the references);
  mcptap --version, mcptap --help, mcptap sessions, mcptap show SESSION, mcptap analyze
on a database of the two sessions of tests/golden/corpus/demo.jsonl (imported once, before the
rounds). `mcptap` is `python -m mcptap` with this interpreter.
Each command's median is printed with its ratio to the reference it is held to (a hyperfine-
style median of ROUNDS runs, after one warm-up round).

Targets: --version ≤ 2.5x `python -c pass`; sessions and show ≤ 8x `python -c "import sqlite3"`;
analyze ≤ 12x.

With --tree DIR (a checkout of an older commit) the same mcptap commands are also run from that
tree (`python -m mcptap` with it first on PYTHONPATH, bench/trees.py), interleaved with the rest:
before and after, from one run.

Usage:  python bench/startup.py [--rounds N] [--tree DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import print_summary, run, verdict
import trees  # noqa: E402  (bench/trees.py)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(HERE, "tests", "golden", "corpus", "demo.jsonl")
ROUNDS = 21
TARGETS = {"--version": ("pass", 2.5), "sessions": ("import sqlite3", 8.0), "show": ("import sqlite3", 8.0),
           "analyze": ("import sqlite3", 12.0)}


def mcptap_argv() -> list[str]:
    return [sys.executable, "-m", "mcptap"]


def commands(db: str) -> dict[str, list[str]]:
    m = mcptap_argv()
    return {
        "pass": [sys.executable, "-c", "pass"],
        "import sqlite3": [sys.executable, "-c", "import sqlite3"],
        "--version": [*m, "--version"],
        "--help": [*m, "--help"],
        "sessions": [*m, "sessions", "--db", db],
        "show": [*m, "show", "--db", db, "demo"],
        "analyze": [*m, "analyze", "--db", db],
    }


MCPTAP_COMMANDS = ("--version", "--help", "sessions", "show", "analyze")


def timed(argv: list[str], env: dict) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    took = time.perf_counter() - began
    if done.returncode not in (0, 1):  # analyze exits 1 when it finds errors
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}")
    return took


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--rounds", type=int, default=ROUNDS)
    parse.add_argument("--tree", metavar="DIR", help="also run the commands from this code tree (before)")
    args = parse.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    env = {k: v for k, v in os.environ.items() if k != "MCPTAP_DB"}
    with tempfile.TemporaryDirectory(prefix="mcptap-startup-") as tmp:
        db = os.path.join(tmp, "small.db")
        subprocess.run([*mcptap_argv(), "import", "--db", db, CORPUS], check=True, stdout=subprocess.DEVNULL, env=env)
        cmds = {name: (argv, env) for name, argv in commands(db).items()}
        if args.tree:
            old_db = os.path.join(tmp, "small-tree.db")
            subprocess.run([*mcptap_argv(), "import", "--db", old_db, CORPUS], check=True, stdout=subprocess.DEVNULL,
                           env=env)
            tree_env = trees.pythonpath(args.tree, env)
            for name, argv in commands(old_db).items():
                if name in MCPTAP_COMMANDS:
                    cmds[f"tree {name}"] = (argv, tree_env)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for n in range(args.rounds + 1):
            for name, (argv, run_env) in cmds.items():
                took = timed(argv, run_env)
                if n:  # the first round warms the caches
                    times[name].append(took)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"\n{'command':<16} {'median ms':>10} {'min ms':>8}  ratio")
    for name, t in times.items():
        ref = TARGETS.get(name.removeprefix("tree "), ("pass", None))[0]
        ratio = medians[name] / medians[ref]
        print(f"{name:<16} {medians[name] * 1000:>10.1f} {min(t) * 1000:>8.1f}  {ratio:.2f}x {ref}")
    rows = []
    for name, (ref, limit) in TARGETS.items():
        for shown in (name, f"tree {name}"):
            if shown in medians:
                ratio = medians[shown] / medians[ref]
                rows.append((f"{shown} / {ref}", f"{ratio:.2f}x", f"≤ {limit}x", verdict(ratio <= limit)))
    print_summary(rows)


if __name__ == "__main__":
    run(main)
