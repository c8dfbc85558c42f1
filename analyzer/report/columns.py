"""Aligned text columns for the readable reports (`mcptap analyze`, `mcptap sessions`), written
row by row: every cell is measured once and no table is laid out whole, so thousands of rows
print in milliseconds (a table library's layout took seconds per thousand). The last column is
free text (not padded, and wrapped under itself when a terminal width is given) unless it is
aligned right. Colour is rich's (`paint`: its styles rendered for a terminal of 16 colours); on
a terminal a short table is drawn by rich (`show`), piped it is these plain, uncut columns."""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Collection, Sequence
from typing import IO

GAP = "  "
MIN_WRAP = 20  # a last column narrower than this is not wrapped at all
STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}
"""rich styles for a cell naming a severity, when colour is asked for."""
RICH_ROWS = 1000
"""A terminal gets a table drawn by rich up to this many rows; more are written as columns."""


@functools.lru_cache(maxsize=64)
def _style(style: str):
    from rich.style import Style

    return Style.parse(style)


def paint(text: str, style: str) -> str:
    """`text` in a rich style (e.g. "bold red"), as a terminal of 16 colours shows it."""
    from rich.color import ColorSystem

    return _style(style).render(text, color_system=ColorSystem.STANDARD)


def show(out: IO[str], head: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
         terminal: bool = False, colour: bool = False, counts: dict[int, str] | None = None) -> None:
    """The rows for a reader: on a terminal (and up to RICH_ROWS) a table drawn by rich, in
    colour when `colour` (`counts`: a column's style where its count is not 0 or -, e.g. errors
    in red); else `write`'s plain columns, whole."""
    if not terminal or len(rows) > RICH_ROWS:
        write(out, head, rows, right=right, colour=colour)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    from rich import box

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, highlight=False, collapse_padding=True)
    for i, name in enumerate(head):
        table.add_column(name, justify="right" if i in right else "left", overflow="fold", min_width=len(name),
                         no_wrap=i == 0)
    styles = counts or {}
    for row in rows:
        table.add_row(*(Text(cell, style=styles[i]) if i in styles and cell not in ("0", "-") else Text(cell)
                        for i, cell in enumerate(row)))
    Console(file=out, force_terminal=colour, no_color=not colour, color_system="standard" if colour else None,
            highlight=False, markup=False, emoji=False).print(table)


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
        if coloured and cells[0] in STYLES:
            parts[0] = paint(cells[0], STYLES[cells[0]]) + parts[0][len(cells[0]):]
        last = cells[n - 1]
        if measured == n:
            last = last.rjust(widths[n - 1])
        if room is None or len(last) <= room:
            return (GAP.join(parts) + GAP + last).rstrip() + "\n"
        pieces = textwrap.wrap(last, room, break_long_words=True, break_on_hyphens=False) or [""]
        return GAP.join(parts) + GAP + pieces[0] + "\n" + "".join(" " * indent + p + "\n" for p in pieces[1:])

    out.write(line(head, False))
    out.write("".join(line(row, colour) for row in rows))
