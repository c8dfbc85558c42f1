"""`mcptap view`: the viewer served live over a database (analyzer/report/live.py)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from mcptap import extras
from mcptap.errors import warn_stderr
from mcptap.cli.common import AllowOriginOption, DbOption, DEFAULT_DB, app, one_line_errors


@app.command(short_help="Serve the viewer over a database of any size, on a loopback address.")
def view(
    db: DbOption = DEFAULT_DB,
    listen: Annotated[Optional[str], typer.Option(
        "--listen", metavar="[HOST:]PORT", help="Listen here, a loopback address (port 0: any free port); "
                                                "default 127.0.0.1:8810.")] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the system's browser.")] = False,
    no_token: Annotated[bool, typer.Option(
        "--no-token", help="Answer without the random token in the URL (any local program may then read the "
                           "recording).")] = False,
    allow_origin: AllowOriginOption = None,
) -> None:
    """Serve the report's viewer live over the database: the page asks for the frames it shows,
    page by page, so a database of millions of frames opens at once, and a session being
    recorded grows on screen. The database is read-only here (sessions not analysed yet are
    analysed first, as `mcptap report` does, when the file can be written). Prints the URL to
    open, with its token; Ctrl-C stops.

    Example:  mcptap view --db ~/mcp.db --open
    """
    with one_line_errors():
        extras.need("view", "mcptap view")
        from mcptap.report import live

        live.parse_listen(listen)
        analyse_missing(db)

        def ready(url: str) -> None:
            sys.stdout.write(url + "\n")
            sys.stdout.flush()
            sys.stderr.write("mcptap view: open the URL above (Ctrl-C stops)\n")
            sys.stderr.flush()

        status = live.serve(db, listen=listen, token=not no_token, open_browser=open_browser,
                            allow_origins=allow_origin or (), on_ready=ready)
    raise typer.Exit(status)


def analyse_missing(db: str) -> None:
    """Analyse the sessions of `db` not analysed yet, when the file can be written (else say what
    is missing): the live faces read a database as it is (mcptap.api.analyze_missing)."""
    from mcptap import api
    from mcptap.cli import progress

    api.analyze_missing(db, warn=warn_stderr, meter=progress.meter)
