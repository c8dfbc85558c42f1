"""The commands that write sessions elsewhere: export (a frame log, OTLP, HAR, a Parquet
dataset, or OTLP/HTTP to a collector) and bundle (a zip for a bug report)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from mcptap.errors import warn_stderr
from mcptap.report import formats
from mcptap.cli.common import (DbOption, DEFAULT_DB, FilterOption, SessionAlias, SessionsArgument, app, fail,
                               one_line_errors, sessions_of)


@app.command("export", short_help='Write sessions in a format, or send them to a collector.')
def export_cmd(
    sessions: SessionsArgument = None,
    db: DbOption = DEFAULT_DB,
    session: SessionAlias = None,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write here instead of stdout (- is stdout; a name ending "
                                                       ".gz or .zst is compressed; parquet: the dataset's "
                                                       "folder).")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT",
                                     help=f"{', '.join(formats.names(formats.FRAMES))} (`mcptap help formats` says "
                                          "what each holds; parquet: an argument naming a SQLite file is a "
                                          "database to export).")] = "jsonl",
    where: FilterOption = None,
    otlp_endpoint: Annotated[Optional[str], typer.Option(
        "--otlp-endpoint", metavar="URL", help="Send spans and metrics to this OTLP/HTTP collector "
                                               "(URL/v1/traces, URL/v1/metrics) instead of writing a file.")] = None,
    header: Annotated[Optional[list[str]], typer.Option(
        "--header", metavar="K=V", help="An HTTP header for --otlp-endpoint (repeatable).")] = None,
    otlp_content: Annotated[bool, typer.Option(
        "--otlp-content", help="OTLP: add tool arguments and results and prompt arguments (as stored, redacted).")
                            ] = False,
) -> None:
    """Write sessions in a format: frame-log JSONL (`mcptap import` of it gives back identical
    frames), OTLP JSON (spans and metrics by OpenTelemetry's MCP semantic conventions), HAR 1.2,
    or a Parquet dataset partitioned by day (sessions of many databases in one; a session
    exported again replaces its rows); or send spans and metrics to an OpenTelemetry collector
    over OTLP/HTTP.

    Example:  mcptap export --db ~/mcp.db 0193b2 -o incident.jsonl.gz

    Example:  mcptap export --db ~/mcp.db --filter 'finding or kind == error' -o wrong.jsonl

    Example:  mcptap export --db ~/mcp.db --otlp-endpoint http://127.0.0.1:4318 --header x-team=mcp

    Example:  mcptap export --format parquet -o fleet/ host1.db host2.db
    """
    from mcptap import api
    from mcptap.cli import progress

    named = sessions_of(sessions, session)
    with one_line_errors():
        chosen = formats.get(fmt, formats.FRAMES)
        if not chosen.stream:  # a folder of many databases' sessions (a Parquet dataset: store/dataset.py)
            if output is None or output == "-":
                raise fail(f"--format {fmt} writes a folder: give it with -o DIR")
            databases = [s for s in named or () if api.is_database(s)]
            exported = api.export_dataset(output, databases or [db], sessions=[s for s in named or ()
                                                                               if s not in databases],
                                          meter=progress.meter)
            typer.echo(f"exported {exported} session{'s' * (exported != 1)} into {output}", err=True)
        elif otlp_endpoint is not None:
            if where is not None:
                raise fail("--filter selects frames for a frame log: leave it out with --otlp-endpoint")
            if output is not None:
                raise fail("--otlp-endpoint sends to a collector: leave out -o")
            spans, points, count = api.send_otlp(db, otlp_endpoint, sessions=named, headers=_headers(header or []),
                                                 content=otlp_content, warn=warn_stderr, meter=progress.meter)
            typer.echo(f"{otlp_endpoint} accepted {spans} spans and {points} histogram data points of {count} sessions")
        else:
            if where is not None and not chosen.filters:
                raise fail(f"--filter selects frames for a frame log (--format jsonl), not {fmt}")
            api.export_log(db, output, sessions=named, format=fmt, where=where, content=otlp_content,
                           meter=progress.meter)


def _headers(given: list[str]) -> dict[str, str]:
    """--header K=V options as a dict (a bad one: a one-line error)."""
    sent = {}
    for h in given:
        name, eq, value = h.partition("=")
        if not eq or not name.strip():
            raise fail(f"--header {h!r}: give NAME=VALUE")
        sent[name.strip()] = value.strip()
    return sent


@app.command("bundle", short_help="Pack sessions into one zip for a bug report, redacted and checked.")
def bundle_cmd(
    sessions: SessionsArgument = None,
    db: DbOption = DEFAULT_DB,
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE.zip", help="The zip file to write "
                                                                                   "(- : stdout, not a terminal).")
                      ] = "mcptap-bundle.zip",
) -> None:
    """Pack sessions into one zip for a bug report: their frames redacted (and checked: nothing
    the default redaction replaces is left), the analysis as JSON and SARIF, the self-contained
    report, and the versions of mcptap, the client and the server. `mcptap import FILE.zip`
    reads it back.

    Example:  mcptap bundle --db ~/mcp.db time -o time-bug.zip
    """
    from mcptap.report import bundle

    with one_line_errors():
        manifest = bundle.write(db, output, sessions or None,
                                warn=warn_stderr)
    count = len(manifest["sessions"])
    if output != "-":
        typer.echo(f"wrote {output}: {count} session{'' if count == 1 else 's'}")
