"""`mcptap tui`: the terminal UI over a database, live (analyzer/tui/)."""

from __future__ import annotations

from typing import Annotated

import typer

from mcptap import extras
from mcptap.cli.common import DbOption, DEFAULT_DB, app, one_line_errors


@app.command(short_help="Watch and filter a database in the terminal, live (Textual).")
def tui(
    db: DbOption = DEFAULT_DB,
    filter: Annotated[str, typer.Option("--filter", metavar="FILTER",
                                        help="Start with this display filter (docs/filters.md).")] = "",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Start at the newest frame and stay there as "
                                                                "frames are recorded.")] = False,
) -> None:
    """A terminal UI over the database: the sessions and the runs (one host's servers), the frame
    list with the display filter (`/`), a frame's detail with pretty JSON, its pair (`p`) and its
    findings, the findings by code (`F`), and following a recording as it grows (`f`). j/k move,
    Enter opens (on a session or a run: its frames), s and r go to the sessions and the runs, Esc
    goes back, q quits; the keys are shown at the foot, the mouse works; NO_COLOR turns colours
    off. Frames are read a page at a time, so a database of millions of frames opens at once.
    Sessions not analysed yet are analysed first when the file can be written, as `mcptap view`
    does.

    Example:  mcptap tui --db ~/mcp.db --filter 'kind == error or finding'
    """
    with one_line_errors():
        extras.need("tui", "mcptap tui")
        from mcptap.cli.view import analyse_missing
        from mcptap.store import filterlang

        if filter.strip():
            filterlang.parse(filter)
        analyse_missing(db)
        from mcptap.tui.app import TapApp

        TapApp(db, filter=filter, follow=follow).run()
