"""What every command shares: the typer app, the options several commands take, and how an
error becomes one line on stderr and exit status 2."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap import __version__, options
from mcptap.errors import MCPTapError, say_error

app = typer.Typer(
    name="mcptap",
    help="Record MCP sessions byte for byte, then tell, frame by frame, what was wrong.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)

DbOption = Annotated[
    str,
    typer.Option("--db", envvar=options.DB_ENV, metavar="PATH", help=options.DB_HELP),
]
DEFAULT_DB = options.DEFAULT_DB


SessionArgument = Annotated[str, typer.Argument(help="The recorded session: id, unique id prefix, or label (the newest).")]
NoRedactOption = Annotated[bool, typer.Option("--no-redact", help=options.NO_REDACT_HELP)]
RedactKeyOption = Annotated[Optional[list[str]], typer.Option("--redact-key", metavar="NAME",
                                                              help=options.REDACT_KEY_HELP)]
RedactPathOption = Annotated[Optional[list[str]], typer.Option("--redact-path", metavar="PATH",
                                                               help=options.REDACT_PATH_HELP)]
AllowOriginOption = Annotated[Optional[list[str]], typer.Option(
    "--allow-origin", metavar="ORIGIN",
    help="Also answer browser requests from this origin, e.g. https://app.example.com, and requests naming its "
         "host (repeatable; * answers every Origin and Host). By default only local origins and hosts are "
         "answered, as the MCP spec asks of local servers: others get 403 (Origin) or 421 (Host).")]


MaxFrameOption = Annotated[str, typer.Option("--max-frame", metavar="SIZE", help=options.MAX_FRAME_HELP)]
MAX_FRAME_DEFAULT = options.MAX_FRAME_DEFAULT


def max_frame_of(text: str) -> int:
    """--max-frame's bytes; a size that cannot be read is a usage error."""
    from mcptap.wire.bounded import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise fail(f"--max-frame: {exc}") from None


def redaction_of(no_redact: bool, keys: list[str] | None, paths: list[str] | None):
    """The Redaction the options ask for; a JSON path that cannot be read is a usage error."""
    from mcptap.redaction import Redaction

    try:
        return Redaction.from_options(no_redact, keys, paths)
    except ValueError as exc:
        raise fail(str(exc)) from None


def fail(message: str, code: int = 2) -> typer.Exit:
    say_error(message)
    return typer.Exit(code)


@contextlib.contextmanager
def one_line_errors():
    """Bad input is one line on stderr and exit 2, never a traceback."""
    try:
        yield
    except MCPTapError as exc:
        raise fail(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        raise fail(f"database error: {exc}") from None
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as other Unix tools do
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w", encoding="utf-8")
        raise typer.Exit(0) from None


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"mcptap {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[Optional[bool], typer.Option("--version", callback=version_callback, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    """Record MCP sessions byte for byte, then tell, frame by frame, what was wrong.

    Example:  mcptap record --db /tmp/mcp.db -- uvx mcp-server-time
    """



PER_CODE = 5  # mcptap.report.PER_CODE, not imported here: that module pulls in the whole analysis
FilterOption = Annotated[Optional[str], typer.Option(
    "--filter", metavar="EXPR",
    help="Only the frames this display filter selects (docs/filters.md), e.g. "
         "'method == \"tools/call\" and latency > 500ms'.")]
MaxPerCodeOption = Annotated[int, typer.Option(
    "--max-per-code", metavar="N", min=0,
    help="Findings of one code listed per session before the rest are summed up in one line (0: all). "
         "json and jsonl always have every finding.")]


class DiffFormat(str, Enum):
    """replay's and diff's report formats."""
    text = "text"
    json = "json"
