"""Aligned text columns for the readable reports (`mcptap analyze`, `mcptap sessions`), written
row by row: every cell is measured once and no table is laid out whole, so thousands of rows
print in milliseconds (a table library's layout took seconds per thousand). The last column is
free text (not padded) unless it is aligned right. On a terminal a table fits its width (`fit`):
text columns shrink, the last first, then the widest, and their cells are cut with an ellipsis;
numbers are never cut, and no cell wraps. Colour is rich's (`paint`: its styles rendered for a
terminal of 16 colours); on a terminal a short table is drawn by rich (`show`), piped (or
`--wide`) it is these plain, uncut columns."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import IO

GAP = "  "
MIN_TEXT = 4  # a text column is not cut narrower than this (its header is cut too)
ELLIPSIS = "…"
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


def fit(natural: Sequence[int], width: int | None, right: Collection[int] = ()) -> list[int]:
    """Column widths within `width` (gaps included): the text columns (not in `right`) give way,
    the last first, then the widest, down to MIN_TEXT; numbers keep theirs."""
    widths = list(natural)
    if width is None:
        return widths
    over = sum(widths) + len(GAP) * (len(widths) - 1) - width
    last = len(widths) - 1
    if over > 0 and last not in right and widths[last] > MIN_TEXT:
        cut = min(over, widths[last] - MIN_TEXT)
        widths[last] -= cut
        over -= cut
    while over > 0:
        text = [i for i in range(len(widths)) if i not in right and widths[i] > MIN_TEXT]
        if not text:
            break
        widest = max(text, key=lambda i: widths[i])
        widths[widest] -= 1
        over -= 1
    return widths


def cut(text: str, width: int) -> str:
    """`text` within `width` characters, its end replaced by an ellipsis when it is longer."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def show(out: IO[str], head: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
         terminal: bool = False, colour: bool = False, counts: dict[int, str] | None = None,
         width: int | None = None) -> None:
    """The rows for a reader: on a terminal (and up to RICH_ROWS) a table drawn by rich within
    its width (`fit`), in colour when `colour` (`counts`: a column's style where its count is not
    0 or -, e.g. errors in red); else `write`'s plain columns, whole."""
    if not terminal or len(rows) > RICH_ROWS:
        write(out, head, rows, right=right, colour=colour, width=width if terminal else None)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    from rich import box

    console = Console(file=out, force_terminal=colour, no_color=not colour, color_system="standard" if colour else None,
                      highlight=False, markup=False, emoji=False, width=width)
    natural = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(head)]
    widths = fit(natural, console.width, right)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, highlight=False, collapse_padding=True)
    for i, name in enumerate(head):
        table.add_column(cut(name, widths[i]), justify="right" if i in right else "left", overflow="ellipsis",
                         no_wrap=True, min_width=widths[i], max_width=widths[i])
    styles = counts or {}
    for row in rows:
        table.add_row(*(Text(cut(cell, widths[i]), style=styles[i]) if i in styles and cell not in ("0", "-")
                        else Text(cut(cell, widths[i])) for i, cell in enumerate(row)))
    console.print(table)


def write(out: IO[str], head: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
          width: int | None = None, colour: bool = False) -> None:
    """`head` and `rows` (cells already text) as aligned columns; `right`: the indexes of
    columns aligned right (numbers); `width`: the terminal's, to fit the table within (`fit`;
    None: whole cells)."""
    n = len(head)
    widths = [len(h) for h in head]
    for row in rows:
        for i in range(n):
            if len(row[i]) > widths[i]:
                widths[i] = len(row[i])
    widths = fit(widths, width, right)
    padded_last = n - 1 in right

    def line(cells: Sequence[str], coloured: bool) -> str:
        if width is not None:
            cells = [cut(c, w) for c, w in zip(cells, widths)]
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells[: n - 1], widths))]
        if coloured and cells[0] in STYLES:
            parts[0] = paint(cells[0], STYLES[cells[0]]) + parts[0][len(cells[0]):]
        last = cells[n - 1].rjust(widths[n - 1]) if padded_last else cells[n - 1]
        return (GAP.join(parts) + GAP + last).rstrip() + "\n"

    out.write(line(head, False))
    out.write("".join(line(row, colour) for row in rows))
