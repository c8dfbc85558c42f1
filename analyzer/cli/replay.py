"""The commands that stand in for one side of a recorded session: replay (the client, against a
live server) and serve (the server, for a live client)."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Optional

import typer

from mcptap.errors import say_error
from mcptap.cli.common import (AllowOriginOption, ColorOption, DbOption, DEFAULT_DB, DiffFormat, IgnoreOldOption,
                               IgnorePathOption, MaxFrameOption, MAX_FRAME_DEFAULT, app, color_on, deprecated,
                               diff_writer, fail, max_frame_of, one_line_errors, session_of_log)


@app.command(short_help='Send a recorded client side to a live server and diff the answers.')
def replay(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(
        metavar="SESSION", help="The recorded session: id, unique id prefix, or label (the newest); or a frame log "
                                "holding one session (- is stdin; .gz, .zst), replayed from a temporary database "
                                "(or --db when given).")],
    db: DbOption = DEFAULT_DB,
    command: Annotated[Optional[str], typer.Option(
        "--command", metavar='"CMD ARGS..."', help="Start the live server with this command line, over stdio "
                                                   "(default: an HTTP recording's URL).")] = None,
    command_from_log: Annotated[bool, typer.Option(
        "--command-from-log", help="Start the live server with the command line the recording names, printed "
                                   "first (a recording, an imported log above all, may name any command).")] = False,
    url: Annotated[Optional[str], typer.Option(
        "--url", metavar="URL", help="Connect to the live server at this Streamable HTTP URL.")] = None,
    sse: Annotated[bool, typer.Option("--sse", help="--url is a legacy HTTP+SSE endpoint (2024-11-05).")] = False,
    ignore_path: IgnorePathOption = None,
    ignore: IgnoreOldOption = None,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", min=0.1,
                                           help="How long to wait for each answer.")] = 10.0,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="Report format (table is text).")] = DiffFormat.text,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")] = False,
    no_record: Annotated[bool, typer.Option("--no-record", help="Do not record the replay as a new session.")] = False,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
    color: ColorOption = None,
) -> None:
    """Send the client side of a recorded session to a live server (stdio or HTTP, whatever the
    recording's transport was: --command, --url, an HTTP recording's URL by default, or with
    --command-from-log the command the recording names), answer the server's own requests with the recorded answers,
    record the replay as a new session linked to the original, and print a structural diff of
    every answer. Exit 0 when equal, 1 when different, 2 on error.

    Example:  mcptap replay --db ~/mcp.db 0193b2 --command "uvx mcp-server-time" --ignore-path '$.result.content[*].text'
    """
    from mcptap import replay as replay_mod

    if ignore:
        deprecated("--ignore", "--ignore-path")
    limit = max_frame_of(max_frame)
    with one_line_errors(), contextlib.ExitStack() as cleanup:
        db, session = session_of_log(ctx, db, session, cleanup)
        outcome = replay_mod.replay(db, session, command=command, url=url, sse=sse,
                                    ignore=[*(ignore_path or ()), *(ignore or ())],
                                    timeout=timeout, record=not no_record, command_from_log=command_from_log,
                                    announce=lambda line: sys.stderr.write(line + "\n"), max_frame=limit)
    if DiffFormat(fmt) is DiffFormat.json or as_json:
        from mcptap.report import jsonout

        jsonout.write_document(sys.stdout, replay_mod.as_json(outcome).items())
        sys.stdout.flush()
    else:
        replay_mod.render(outcome, diff_writer(color_on(color)))
    if outcome.error is not None:
        say_error(outcome.error)
    raise typer.Exit(outcome.exit_status)


@app.command(short_help='Answer a live client as the recorded server.')
def serve(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(
        metavar="SESSION", help="The recorded session: id, unique id prefix, or label (the newest); or a frame log "
                                "file holding one session (.gz, .zst), served from a temporary database (or --db "
                                "when given).")],
    db: DbOption = DEFAULT_DB,
    listen: Annotated[Optional[str], typer.Option(
        "--listen", metavar="[HOST:]PORT", help="Serve Streamable HTTP here (path /mcp; port 0: any free port); "
                                                "default: stdio.")] = None,
    pace: Annotated[bool, typer.Option("--pace", help="Answer after the recorded latency, notifications at their "
                                                      "recorded times.")] = False,
    drop: Annotated[Optional[list[str]], typer.Option(
        "--drop", metavar="METHOD", help="Fault: never answer this method (* for all; repeatable).")] = None,
    delay: Annotated[Optional[list[str]], typer.Option(
        "--delay", metavar="METHOD=SECONDS", help="Fault: answer this method late (* for all; repeatable).")] = None,
    corrupt: Annotated[Optional[list[str]], typer.Option(
        "--corrupt", metavar="METHOD", help="Fault: answer this method with a frame cut in half (repeatable).")] = None,
    allow_origin: AllowOriginOption = None,
    max_body: Annotated[str, typer.Option(
        "--max-body", metavar="SIZE", help="The largest client frame read, in bytes or with K, M or G: a longer HTTP "
                                           "body gets 413 Content Too Large, unread; a longer stdio line an Invalid "
                                           "Request error.")] = "16M",
) -> None:
    """Act as the server of a recorded session for a live client: each request is matched to a
    recorded one (method and params, unused ones first, else method in order) and answered with
    the recorded frames, notifications included, under the live id; one the recording never
    answered (it was cancelled) gets its notifications and no answer; a request with nothing
    recorded gets a JSON-RPC error. Over stdio by default (put it in a host's server config), or Streamable
    HTTP with --listen. Faults and pacing are for testing hosts.

    Example:  mcptap serve --db ~/mcp.db 0193b2 --listen 8809 --delay tools/call=2
    """
    from mcptap.replay import serve as serve_mod
    from mcptap.wire.bounded import parse_size
    from mcptap.wire.textsafe import printable

    def ready(url: str) -> None:
        sys.stderr.write(printable(f"mcptap serve: session {session} on {url} (Ctrl-C stops)") + "\n")
        sys.stderr.flush()

    with one_line_errors(), contextlib.ExitStack() as cleanup:
        try:
            faults = serve_mod.Faults(drop=set(drop or ()), delay=serve_mod.parse_delays(delay or ()),
                                      corrupt=set(corrupt or ()), pace=pace)
        except ValueError as exc:
            raise fail(str(exc)) from None
        try:
            body_limit = parse_size(max_body)
        except ValueError as exc:
            raise fail(f"--max-body: {exc}") from None
        db, session = session_of_log(ctx, db, session, cleanup, stdin=listen is not None)
        status = serve_mod.serve(db, session, listen=listen, faults=faults, on_ready=ready,
                                 allow_origins=allow_origin or (), max_body=body_limit)
    raise typer.Exit(status)
