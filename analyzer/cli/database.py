"""The commands that read and change a database: sessions, show, import, redact."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap.report import formats
from mcptap.cli.common import DiffFormat as DiffFormatAlias  # text or json
from mcptap.cli.common import (ColorOption, DbOption, DEFAULT_DB, FilterOption, MaxFrameOption, MAX_FRAME_DEFAULT,
                               MaxPerCodeOption, NoRedactOption, PER_CODE, RedactKeyOption, RedactPathOption,
                               SessionAlias, SessionsArgument, app, complete_sessions, fail, max_frame_of,
                               one_line_errors, redaction_of, sessions_of)


class ListFormat(str, Enum):
    text = "text"
    table = "table"  # the same as text
    json = "json"
    jsonl = "jsonl"


class TranscriptFormat(str, Enum):
    text = "text"
    table = "table"  # the same as text
    json = "json"
    jsonl = "jsonl"


@app.command(short_help='List the recorded sessions.')
def sessions(
    db: DbOption = DEFAULT_DB,
    fmt: Annotated[ListFormat, typer.Option(
        "--format", help="text (or table); json: one document {\"sessions\": [...]}; jsonl: one session object "
                         "per line.")] = ListFormat.text,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format jsonl.")] = False,
    color: ColorOption = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Then a line as each session starts and as it "
                                                                 "ends, until Ctrl-C.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="On a terminal too, every column whole (as when piped): "
                                                      "the full id beside the handle, full dates.")] = False,
) -> None:
    """List the recorded sessions: id, handle, label, transport, revision, start, duration, frames,
    finding counts (revision and counts once `mcptap analyze` has run), exit status. The handle is
    the shortest end of the id that names the session: every SESSION argument takes it, as it takes
    `@1` (the newest), `@2` (the one before), an id prefix or a label. On a terminal the table fits
    its width (the handle, short UTC times); piped or with --wide every cell is whole. As JSON each
    session has typed values: times as Unix seconds (started_at) and ISO 8601 (started), duration_s,
    exit_status, and null for what is not known.

    Example:  mcptap sessions --db ~/mcp.db --format json | jq '.sessions[] | select(.errors > 0) | .id'

    Example:  mcptap sessions --db ~/mcp.db --follow
    """
    _quick("sessions", db=db, fmt=ListFormat(fmt).value, as_json=as_json, color=color, follow=follow, wide=wide)


def _quick(command: str, **kwargs) -> None:
    """Run `sessions` or `show` as its quick path does (analyzer/quick.py: the same code, parsed
    by typer here)."""
    from mcptap import quick

    try:
        with quick.one_line_errors():
            getattr(quick, command)(**kwargs)
    except quick.Usage as exc:
        raise fail(str(exc)) from None
    except quick.Exit as done:
        raise typer.Exit(done.code) from None


@app.command(short_help="Print a session's transcript, frame by frame.")
def show(
    session: Annotated[Optional[str], typer.Argument(
        metavar="SESSION", show_default=False, autocompletion=complete_sessions,
        help="Session id, handle, @N (the N-th newest), unique id prefix, or label (the newest); with --follow it "
             "may be left out.")] = None,
    db: DbOption = DEFAULT_DB,
    full: Annotated[bool, typer.Option("--full", help="Print whole frames instead of one line each.")] = False,
    stderr: Annotated[bool, typer.Option("--stderr/--no-stderr", help="Interleave the server's stderr.")] = True,
    fmt: Annotated[TranscriptFormat, typer.Option(
        "--format", help="text; json: one document {\"session\", \"findings\", \"frames\"}; jsonl: the session, "
                         "then each frame and stderr line, one object per line.")] = TranscriptFormat.text,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format jsonl.")] = False,
    max_per_code: MaxPerCodeOption = PER_CODE,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Go on printing frames as they are recorded, until the session ends (Ctrl-C stops); "
                               "without SESSION: the newest session, then the next one to start.")] = False,
    color: ColorOption = None,
    where: FilterOption = None,
    run: Annotated[Optional[str], typer.Option(
        "--run", metavar="RUN", help="Every frame of a run (mcptap runs) across its servers, in time order, each "
                                     "line naming its server; instead of SESSION.")] = None,
) -> None:
    """Print a session's transcript: each frame in order with time, direction, size, kind,
    method and id, the frame it pairs with and the latency, its findings beneath it (of each
    code the first few, then one line for the rest), and the server's stderr lines in between.
    As JSON every frame comes whole with all its findings. With --follow, the frames of a
    session being recorded as they are stored.

    Example:  mcptap show --db ~/mcp.db 0193b2 --format jsonl | jq -c 'select(.kind == "request") | {seq, method, latency_s}'

    Example:  mcptap show --db ~/mcp.db --follow time

    Example:  mcptap show --db ~/mcp.db 0193b2 --filter 'method == "tools/call" and latency > 500ms'
    """
    _quick("show", db=db, session=session, fmt=TranscriptFormat(fmt).value, as_json=as_json, color=color,
           follow=follow, full=full, stderr=stderr, max_per_code=max_per_code, where=where, run=run)


@app.command("import", short_help='Bring frame logs and HTTP captures into the database.')
def import_cmd(
    files: Annotated[list[str], typer.Argument(metavar="FILE", help="Logs to import (- reads stdin; .gz and .zst are decompressed).")],
    db: DbOption = DEFAULT_DB,
    new_id: Annotated[bool, typer.Option("--new-id", help="Give imported sessions new ids, even if the "
                                                          "database already holds them.")] = False,
    keep_credentials: Annotated[bool, typer.Option("--keep-credentials", help="The same as --no-redact.")] = False,
    no_redact: NoRedactOption = False,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
    fmt: Annotated[ListFormat, typer.Option(
        "--format", help="text: a line per session (the first 20 of a file, then one for the rest); json: one "
                         "document {\"imported\": [...]}; jsonl: one object per session imported, each "
                         "{file, session, name, merged, frames, stderr_lines}.")] = ListFormat.text,
    read_as: Annotated[Optional[str], typer.Option(
        "--from", metavar="FORMAT",
        help=f"Read every file as this format ({', '.join(formats.names(formats.FRAMES, readable=True))}) instead "
             "of the one its content (or, failing that, its extension) shows.")] = None,
) -> None:
    """Bring logs into the database: frame-log JSONL (including a recorder's spool), mitmproxy
    flow dumps (mitmdump -w), HAR files and bundles (mcptap bundle). The format is detected from
    content (--from names it). Each file goes in whole or not at all. Credentials are redacted on
    the way in, as when recording.

    Example:  mcptap import --db ~/mcp.db incident.jsonl capture.mitm browser.har
    """
    from mcptap.cli import progress

    redaction = redaction_of(no_redact or keep_credentials, redact_key, redact_path)
    limit = max_frame_of(max_frame)
    _quick("import_logs", db=db, files=files, fmt=ListFormat(fmt).value, new_id=new_id, read_as=read_as,
           keep_credentials=keep_credentials or no_redact, redaction=redaction, max_frame=limit, meter=progress.meter)


@app.command("redact", short_help='Redact the secrets of a database already written.')
def redact_cmd(
    sessions: SessionsArgument = None,
    db: DbOption = DEFAULT_DB,
    session: SessionAlias = None,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
    fmt: Annotated[DiffFormatAlias, typer.Option(
        "--format", help="text; json: {\"sessions\", \"frames\", \"exchanges\", \"stderr_lines\", \"commands\", "
                         "\"members\": {PATH: COUNT}}.")] = DiffFormatAlias.text,
) -> None:
    """Apply redaction to a database already written (recorded with --no-redact, or before
    more keys or paths were wanted): credential members of frames, credential HTTP headers, URLs
    and OAuth bodies, and the secrets of the servers' stderr lines and command lines are replaced
    by their keyed hash,
    each frame records which members were, the analysis of a changed session is dropped, and the
    file is rewritten so that no replaced byte survives.

    Example:  mcptap redact --db incident.db --redact-key '*token*' --redact-path '$.params.arguments.dsn'
    """
    from mcptap.cli import progress
    from mcptap.redaction import scrub
    from mcptap.wire.textsafe import printable

    redaction = redaction_of(False, redact_key, redact_path)
    with one_line_errors(), progress.meter() as shown:
        done = scrub.redact_database(db, sessions=sessions_of(sessions, session), redaction=redaction, progress=shown.advance,
                                     stage=shown.stage)
    if DiffFormatAlias(fmt) is DiffFormatAlias.json:
        from mcptap.report import jsonout

        jsonout.write_document(sys.stdout, [
            ("sessions", done.sessions), ("frames", done.frames), ("exchanges", done.exchanges),
            ("stderr_lines", done.stderr_lines), ("commands", done.commands),
            ("members", dict(done.members.most_common()))])
        sys.stdout.flush()
        return
    typer.echo(f"redacted {sum(done.members.values())} members in {done.frames} frames and {done.exchanges} HTTP "
               f"exchanges, {done.stderr_lines} stderr lines and {done.commands} command lines of {done.sessions} "
               "sessions")
    for path, count in done.members.most_common():
        typer.echo(f"  {count:>6}  {printable(path)}")
