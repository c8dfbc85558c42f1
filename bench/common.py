"""What the benchmarks share: the PASS/MISS verdict, the closing summary table, and running
`main` so that a benchmark reports and never fails its caller (exit status 0)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

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
