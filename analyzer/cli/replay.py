"""The commands that stand in for one side of a recorded session: replay (the client, against a
live server) and serve (the server, for a live client)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from mcptap.cli.common import (AllowOriginOption, DbOption, DEFAULT_DB, DiffFormat, MaxFrameOption, MAX_FRAME_DEFAULT,
                               SessionArgument, app, fail, max_frame_of, one_line_errors)


@app.command()
def replay(
    session: SessionArgument,
    db: DbOption = DEFAULT_DB,
    command: Annotated[Optional[str], typer.Option(
        "--command", metavar='"CMD ARGS..."', help="Start the live server with this command line, over stdio "
                                                   "(default: the recorded server's command or URL).")] = None,
    url: Annotated[Optional[str], typer.Option(
        "--url", metavar="URL", help="Connect to the live server at this Streamable HTTP URL.")] = None,
    sse: Annotated[bool, typer.Option("--sse", help="--url is a legacy HTTP+SSE endpoint (2024-11-05).")] = False,
    ignore: Annotated[Optional[list[str]], typer.Option(
        "--ignore", metavar="PATH", help="A volatile member not to compare, as a JSON path: $.result.content[*].text, "
                                         "$..timestamp (repeatable).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", min=0.1,
                                           help="How long to wait for each answer.")] = 10.0,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="Report format.")] = DiffFormat.text,
    no_record: Annotated[bool, typer.Option("--no-record", help="Do not record the replay as a new session.")] = False,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
) -> None:
    """Send the client side of a recorded session to a live server (stdio or HTTP, whatever the
    recording's transport was; by default the server it was recorded from), answer the server's own requests with the recorded answers,
    record the replay as a new session linked to the original, and print a structural diff of
    every answer. Exit 0 when equal, 1 when different, 2 on error.

    Example:  mcptap replay --db ~/mcp.db 0193b2 --command "uvx mcp-server-time" --ignore '$.result.content[*].text'
    """
    from mcptap import replay as replay_mod

    limit = max_frame_of(max_frame)
    with one_line_errors():
        outcome = replay_mod.replay(db, session, command=command, url=url, sse=sse, ignore=ignore or (),
                                    timeout=timeout, record=not no_record, max_frame=limit)
    if DiffFormat(fmt) is DiffFormat.json:
        from mcptap.report import jsonout

        jsonout.write_document(sys.stdout, replay_mod.as_json(outcome).items())
        sys.stdout.flush()
    else:
        replay_mod.render(outcome, typer.echo)
    if outcome.error is not None:
        sys.stderr.write(f"mcptap: error: {outcome.error}\n")
    raise typer.Exit(outcome.exit_status)


@app.command()
def serve(
    session: SessionArgument,
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

    def ready(url: str) -> None:
        sys.stderr.write(f"mcptap serve: session {session} on {url} (Ctrl-C stops)\n")
        sys.stderr.flush()

    with one_line_errors():
        try:
            faults = serve_mod.Faults(drop=set(drop or ()), delay=serve_mod.parse_delays(delay or ()),
                                      corrupt=set(corrupt or ()), pace=pace)
        except ValueError as exc:
            raise fail(str(exc)) from None
        try:
            body_limit = parse_size(max_body)
        except ValueError as exc:
            raise fail(f"--max-body: {exc}") from None
        status = serve_mod.serve(db, session, listen=listen, faults=faults, on_ready=ready,
                                 allow_origins=allow_origin or (), max_body=body_limit)
    raise typer.Exit(status)
