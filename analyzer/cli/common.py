"""What every command shares: the typer app, the options several commands take, and how an
error becomes one line on stderr and exit status 2."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from enum import Enum
from typing import Annotated, Optional

import typer
from typer.core import TyperArgument, TyperGroup

from mcptap import __version__, options
from mcptap.errors import MCPTapError, say_error, warn_stderr
from mcptap.quick import color_on, on_terminal  # noqa: F401  (the commands' colour and terminal checks)


def summary(help_text: str | None) -> str:
    """A command's line in `mcptap --help`: the first sentence of its help, whole."""
    first = " ".join((help_text or "").strip().split("\n\n", 1)[0].split())
    end = re.search(r"[.!?](\s+(?=[A-Z`(])|$)", first)
    return first[: end.start() + 1] if end else first


class Commands(TyperGroup):
    """The app's group: each command listed with the whole first sentence of its help (click
    cuts the first paragraph to the terminal's width and ends it with "...")."""

    def invoke(self, ctx):
        """A bad option value is said in mcptap's words: without the "Value error, " that typer's
        validation puts before the reason, and a number out of its bounds or no number at all as
        `in_our_words` says it, not as pydantic does."""
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            exc.message = in_our_words(exc.message.removeprefix("Value error, "))
            raise


_VALIDATION_WORDS = (
    (re.compile(r"Input should be greater than or equal to (\S+)"), r"must be \1 or more"),
    (re.compile(r"Input should be less than or equal to (\S+)"), r"must be \1 or less"),
    (re.compile(r"Input should be greater than (\S+)"), r"must be more than \1"),
    (re.compile(r"Input should be less than (\S+)"), r"must be less than \1"),
    (re.compile(r"Input should be a valid integer\b.*"), "not a whole number"),
    (re.compile(r"Input should be a valid number\b.*"), "not a number"),
)


def in_our_words(message: str) -> str:
    """A validation message of typer's (pydantic's words: "Input should be greater than or equal
    to 1") said as mcptap says it ("must be 1 or more"); any other message as it is."""
    for pattern, words in _VALIDATION_WORDS:
        message = pattern.sub(words, message)
    return message

    def format_commands(self, ctx, formatter) -> None:
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.short_help:
                cmd.short_help = summary(cmd.help)
        super().format_commands(ctx, formatter)


def _argument_type(self, ctx):
    """An argument with a metavar (SESSION, FILE, PATH) is shown by it alone, not followed by
    its Python type (`<str>`, `<list[str]>`)."""
    return None if self.metavar is not None else _typer_argument_type(self, ctx)


_typer_argument_type = getattr(TyperArgument, "display_type_rich", None)
if _typer_argument_type is not None:  # typer >= 0.20 shows an argument's Python type beside its name
    TyperArgument.display_type_rich = _argument_type


def _usage_name(self) -> str:
    """An argument in a usage line as git and click write it (and `mcptap record`'s): SESSION when
    required, [SESSION] when not, followed by ... when it repeats (typer writes {SESSION} when required)."""
    name = self.display_name_raw
    return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")


if hasattr(TyperArgument, "_usage_display_name"):  # typer >= 0.2x: its own usage names
    TyperArgument._usage_display_name = _usage_name

app = typer.Typer(
    name="mcptap",
    help="Record MCP sessions byte for byte, then tell, frame by frame, what was wrong.",
    cls=Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)

DbOption = Annotated[
    str,
    typer.Option("--db", envvar=options.DB_ENV, metavar="PATH", help=options.DB_HELP),
]
DEFAULT_DB = options.DEFAULT_DB


def complete_sessions(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of a SESSION argument: the handles, labels and `@N` of the database the
    command line names (--db, else $MCPTAP_DB, else ./mcptap.db); nothing when it cannot be read."""
    db = ctx.params.get("db") or os.environ.get(options.DB_ENV) or DEFAULT_DB
    if not os.path.isfile(db):
        return []
    import sqlite3

    try:
        from mcptap import store

        conn = store.open_existing(db)
        try:
            return store.completions(conn, incomplete)
        finally:
            conn.close()
    except (MCPTapError, sqlite3.Error):
        return []


SessionsArgument = Annotated[Optional[list[str]], typer.Argument(
    metavar="SESSION", show_default=False, autocompletion=complete_sessions,
    help="Sessions (id, handle, @N, unique id prefix or label; repeatable); default all.")]
SessionAlias = Annotated[Optional[list[str]], typer.Option("--session", metavar="SESSION", hidden=True,
                                                           help="The same as a SESSION argument (as before).")]


def sessions_of(positional: list[str] | None, alias: list[str] | None) -> list[str] | None:
    """The sessions named as arguments and by the hidden `--session` alias, in order; None: none."""
    named = [*(positional or ()), *(alias or ())]
    return named or None


LOG_EXTENSIONS = (".jsonl", ".json", ".ndjson", ".log", ".har", ".mitm", ".flows", ".dump", ".gz", ".zst")
"""An argument with one of these extensions (or a /) names a FILE of frames even when it is missing."""


def names_a_file(arg: str) -> bool:
    """Whether a FILE-or-SESSION argument is a file of frames: `-` (stdin), a path that exists, or
    one that looks like a path (a / or a log's extension); any other is a SESSION."""
    return arg == "-" or os.path.exists(arg) or os.sep in arg or arg.lower().endswith(LOG_EXTENSIONS)


def session_of_log(ctx: typer.Context, db: str, ref: str, cleanup: contextlib.ExitStack, *,
                   stdin: bool = True) -> tuple[str, str]:
    """replay's and serve's SESSION: a session of `db`, or a frame log (or capture; `-`, .gz and
    .zst as everywhere) holding one session, imported into a temporary database (into --db when
    it is given on the command line): (the database, the session) to use."""
    if not names_a_file(ref):
        return db, ref
    if ref == "-" and not stdin:
        raise fail("stdin is the client's here: give the log as a file")
    from mcptap import api

    given = getattr(ctx.get_parameter_source("db"), "name", None) == "COMMANDLINE"
    return api.session_of_log(ref, db if given else None, cleanup=cleanup, warn=warn_stderr)


def deprecated(old: str, new: str) -> None:
    """One line on stderr: an option name kept for old scripts, and the one to use."""
    warn_stderr(f"{old} is deprecated; use {new}")


ColorOption = Annotated[Optional[bool], typer.Option(
    "--color/--no-color", show_default=False,
    help="Colour on stdout (default: on a terminal, unless NO_COLOR is set).")]


_DIFF_WORD = re.compile(r"^(\s*(?:answer )?)(changed|added|removed|no answer)\b|^(equal|different)(?=:)")
DIFF_STYLES = {"changed": "yellow", "added": "green", "removed": "red", "no answer": "red", "equal": "bold green",
               "different": "bold red"}


def diff_writer(colour: bool):
    """typer.echo for diff's and replay's report lines, the kind of each change and the verdict
    coloured (rich styles) when `colour`; the lines are already escaped (printable)."""
    if not colour:
        return typer.echo
    from mcptap.report.columns import paint

    def write(line: str) -> None:
        m = _DIFF_WORD.match(line)
        if m:
            word = m.group(2) or m.group(3)
            line = (m.group(1) or "") + paint(word, DIFF_STYLES[word]) + line[m.end():]
        typer.echo(line, color=True)

    return write


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
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as other Unix tools do
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w", encoding="utf-8")
        raise typer.Exit(0) from None
    except Exception as exc:
        sqlite3 = sys.modules.get("sqlite3")  # only a loaded sqlite3 raises its errors: --help loads none
        if sqlite3 is None or not isinstance(exc, sqlite3.DatabaseError):
            raise
        raise fail(f"database error: {exc}") from None


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
    table = "table"  # the same as text
    json = "json"


IgnorePathOption = Annotated[Optional[list[str]], typer.Option(
    "--ignore-path", metavar="PATH", help="A volatile member not to compare, as a JSON path: "
                                          "$.result.content[*].text, $..timestamp (repeatable).")]
IgnoreOldOption = Annotated[Optional[list[str]], typer.Option(
    "--ignore", metavar="PATH", hidden=True, help="The same as --ignore-path (deprecated).")]
