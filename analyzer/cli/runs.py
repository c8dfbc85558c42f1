"""`mcptap runs`: the runs of a database (the sessions one host process started, or one HTTP client's
within a window: analyzer/report/runview.py)."""

from __future__ import annotations

import shutil
import sys
from typing import Annotated

import typer

from mcptap.cli.common import DbOption, DEFAULT_DB, app, one_line_errors
from mcptap.cli.database import ListFormat


@app.command(short_help="List the runs: the sessions one host process (or HTTP client) started, together.")
def runs(
    db: DbOption = DEFAULT_DB,
    fmt: Annotated[ListFormat, typer.Option(
        "--format", help="text (or table); json: one document {\"runs\": [...]}; jsonl: one run object per "
                         "line.")] = ListFormat.text,
) -> None:
    """List the runs: a run is every session one host process started (each stdio server it ran
    through `mcptap record`), or, through `mcptap proxy`, one client's sessions (its address and
    User-Agent) while each starts within 5 minutes of the last. Each run: its handle, start,
    sessions, frames, findings (once analysed), the host (the application `mcptap wrap` named, its
    process id and program, or the HTTP client) and its servers. `mcptap show --run RUN` prints one run's frames across all its
    servers in time order; RUN is the handle, the id, a unique start of it, or @1 for the newest.

    Example:  mcptap runs --db ~/mcp.db
    """
    with one_line_errors():
        from mcptap import quick, store
        from mcptap.report import runview

        conn = store.open_existing(db)
        terminal = quick.on_terminal()
        width = shutil.get_terminal_size((160, 24)).columns if terminal else None
        runview.write_runs(sys.stdout, conn, ListFormat(fmt).value, terminal=terminal, width=width)
