"""The commands that write sessions elsewhere: export (a frame log, OTLP, HAR, a Parquet
dataset, or OTLP/HTTP to a collector) and bundle (a zip for a bug report)."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from mcptap.errors import warn_stderr
from mcptap.outfile import WriteOptions
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
    from mcptap import store
    from mcptap.cli import progress

    named = sessions_of(sessions, session)
    with one_line_errors():
        chosen = formats.get(fmt, formats.FRAMES)
        if not chosen.stream:  # a folder of many databases' sessions (a Parquet dataset: store/dataset.py)
            databases = [s for s in named or () if _is_database(s)]
            _export_parquet(databases or [db], [s for s in named or () if s not in databases], output)
            return
        conn = store.open_existing(db)
        ids = [store.resolve_session(conn, s) for s in named] if named else store.session_ids(conn)
        if otlp_endpoint is not None:
            if where is not None:
                raise fail("--filter selects frames for a frame log: leave it out with --otlp-endpoint")
            _send_otlp(conn, ids, otlp_endpoint, header or [], otlp_content, output)
            return
        for sid in ids if chosen.transports else ():
            transport = store.get_session(conn, sid)["transport"]
            if transport not in chosen.transports:
                raise fail(f"session {sid} is {transport}: {fmt} holds only {', '.join(chosen.transports)} sessions; "
                           f"export it as {' or '.join(formats.holding(transport))}")
        keep = None
        if where is not None:
            if not chosen.filters:
                raise fail(f"--filter selects frames for a frame log (--format jsonl), not {fmt}")
            from mcptap.engine import selection

            keep = selection.select(db, where, ids if named else None)
        total = store.count_frames(conn, ids) if keep is None else sum(len(v) for v in keep.values())
        with progress.meter("exporting", total) as shown, formats.output(output, binary=chosen.binary) as out:
            chosen.write(conn, out, WriteOptions(sessions=ids, progress=shown.advance, keep=keep, content=otlp_content))


def _is_database(arg: str) -> bool:
    from mcptap import store

    try:
        with open(arg, "rb") as fh:
            return fh.read(len(store.SQLITE_HEADER)) == store.SQLITE_HEADER
    except OSError:
        return False


def _export_parquet(databases: list[str], refs: list[str], output: str | None) -> None:
    """Every database's sessions (or those named, in whichever database holds them) into the dataset."""
    from mcptap import extras, store
    from mcptap.cli import progress

    extras.need("parquet", "--format parquet")
    from mcptap.store import dataset

    if output is None or output == "-":
        raise fail("--format parquet writes a folder: give it with -o DIR")
    exported = 0
    for path in databases:
        conn = store.open_existing(path)
        try:
            ids = [store.resolve_session(conn, s) for s in refs if _holds(conn, s)] if refs else None
            total = store.count_frames(conn, ids)
        finally:
            conn.close()
        if ids == []:
            continue
        with progress.meter(f"exporting {os.path.basename(path)}", total) as shown:
            exported += len(dataset.export_database(path, output, WriteOptions(sessions=ids or (),
                                                                                progress=shown.advance)))
    if refs and not exported:
        raise fail(f"no session {refs[0]} in {', '.join(databases)}")
    typer.echo(f"exported {exported} session{'s' * (exported != 1)} into {output}", err=True)


def _holds(conn, ref: str) -> bool:
    from mcptap import store
    from mcptap.errors import SessionNotFound

    try:
        store.resolve_session(conn, ref)
    except SessionNotFound:
        return False
    return True


def _send_otlp(conn, ids: list[str], endpoint: str, headers: list[str], content: bool, output: str | None) -> None:
    from mcptap import extras, store
    from mcptap.cli import progress

    if output is not None:
        raise fail("--otlp-endpoint sends to a collector: leave out -o")
    sent = {}
    for h in headers:
        name, eq, value = h.partition("=")
        if not eq or not name.strip():
            raise fail(f"--header {h!r}: give NAME=VALUE")
        sent[name.strip()] = value.strip()
    if not endpoint.startswith(("http://", "https://")):
        raise fail(f"--otlp-endpoint {endpoint!r}: give an http:// or https:// URL")
    extras.need("otel", "--otlp-endpoint")
    from mcptap.report import otlp, otlp_http

    with progress.meter("exporting", store.count_frames(conn, ids)) as shown:
        spans, points = otlp_http.send(otlp.requests(conn, ids, content=content, progress=shown.advance), endpoint,
                                       sent, warn=warn_stderr)
    typer.echo(f"{endpoint} accepted {spans} spans and {points} histogram data points of {len(ids)} sessions")


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
