"""Aligned text columns for the readable reports (`mcptap analyze`, `mcptap sessions`), written
row by row: every cell is measured once and no table is laid out whole, so thousands of rows
print in milliseconds (a table library's layout took seconds per thousand). The last column is
free text (not padded, and wrapped under itself when a terminal width is given) unless it is
aligned right."""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Sequence
from typing import IO

GAP = "  "
MIN_WRAP = 20  # a last column narrower than this is not wrapped at all
COLOURS = {"error": "\x1b[1;31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
"""ANSI colours for a first cell naming a severity, when colour is asked for."""
RESET = "\x1b[0m"


def write(out: IO[str], head: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
          width: int | None = None, colour: bool = False) -> None:
    """`head` and `rows` (cells already text) as aligned columns; `right`: the indexes of
    columns aligned right (numbers); `width`: the terminal's, to wrap the last column within."""
    n = len(head)
    measured = n if n - 1 in right else n - 1
    widths = [len(h) for h in head]
    for row in rows:
        for i in range(measured):
            if len(row[i]) > widths[i]:
                widths[i] = len(row[i])
    indent = sum(widths[: n - 1]) + len(GAP) * (n - 1)
    room = None if width is None or width - indent < MIN_WRAP else width - indent

    def line(cells: Sequence[str], coloured: bool) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells[: n - 1], widths))]
        if coloured and cells[0] in COLOURS:
            parts[0] = COLOURS[cells[0]] + cells[0] + RESET + parts[0][len(cells[0]):]
        last = cells[n - 1]
        if measured == n:
            last = last.rjust(widths[n - 1])
        if room is None or len(last) <= room:
            return (GAP.join(parts) + GAP + last).rstrip() + "\n"
        pieces = textwrap.wrap(last, room, break_long_words=True, break_on_hyphens=False) or [""]
        return GAP.join(parts) + GAP + pieces[0] + "\n" + "".join(" " * indent + p + "\n" for p in pieces[1:])

    out.write(line(head, False))
    out.write("".join(line(row, colour) for row in rows))
