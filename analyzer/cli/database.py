"""The commands that read and change a database: sessions, show, export, import, redact."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap.cli.common import (DbOption, DEFAULT_DB, MaxFrameOption, MAX_FRAME_DEFAULT, MaxPerCodeOption,
                               NoRedactOption, PER_CODE, RedactKeyOption, RedactPathOption, app, fail,
                               max_frame_of, one_line_errors, redaction_of)


class ListFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


class TranscriptFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


@app.command()
def sessions(
    db: DbOption = DEFAULT_DB,
    fmt: Annotated[ListFormat, typer.Option(
        "--format", help="table; json: one document {\"sessions\": [...]}; jsonl: one session object per line.")
    ] = ListFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format jsonl (one JSON object per session "
                                                         "per line, as before --format).")] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Then a line as each session starts and as it "
                                                                 "ends, until Ctrl-C.")] = False,
) -> None:
    """List the recorded sessions: id, label, transport, revision, start, duration, frames, finding
    counts (revision and counts once `mcptap analyze` has run), exit status. As JSON each session
    has typed values: times as Unix seconds (started_at) and ISO 8601 (started), duration_s,
    exit_status, and null for what is not known.

    Example:  mcptap sessions --db ~/mcp.db --format json | jq '.sessions[] | select(.errors > 0) | .id'

    Example:  mcptap sessions --db ~/mcp.db --follow
    """
    from mcptap import store
    from mcptap.report import columns, jsonout, transcript

    if follow:
        if ListFormat(fmt) is not ListFormat.table or as_json:
            raise fail("--follow prints lines of text: leave out --format and --json")
        from mcptap.report import follow as follow_mod

        def write(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        with one_line_errors():
            try:
                follow_mod.follow_sessions(db, write)
            except KeyboardInterrupt:
                raise typer.Exit(0) from None
        return

    fmt = ListFormat(fmt)
    if as_json and fmt not in (ListFormat.table, ListFormat.jsonl):
        raise fail("--json is --format jsonl: give one of them")
    if as_json:
        fmt = ListFormat.jsonl
    with one_line_errors():
        objects = transcript.session_objects(store.open_existing(db))
        if fmt is ListFormat.json:
            jsonout.write_document(sys.stdout, [("sessions", objects)])
        elif fmt is ListFormat.jsonl:
            jsonout.write_lines(sys.stdout, objects)
        elif not objects:
            sys.stdout.write("(no sessions yet)\n")
        else:
            columns.write(sys.stdout, transcript.SESSION_COLUMNS, [transcript.session_cells(o) for o in objects],
                          right={6, 7, 8})
        sys.stdout.flush()


@app.command()
def show(
    session: Annotated[Optional[str], typer.Argument(
        help="Session id, unique id prefix, or label (the newest); with --follow it may be left out.")] = None,
    db: DbOption = DEFAULT_DB,
    full: Annotated[bool, typer.Option("--full", help="Print whole frames instead of one line each.")] = False,
    stderr: Annotated[bool, typer.Option("--stderr/--no-stderr", help="Interleave the server's stderr.")] = True,
    fmt: Annotated[TranscriptFormat, typer.Option(
        "--format", help="text; json: one document {\"session\", \"findings\", \"frames\"}; jsonl: the session, "
                         "then each frame and stderr line, one object per line.")] = TranscriptFormat.text,
    max_per_code: MaxPerCodeOption = PER_CODE,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Go on printing frames as they are recorded, until the session ends (Ctrl-C stops); "
                               "without SESSION: the newest session, then the next one to start.")] = False,
) -> None:
    """Print a session's transcript: each frame in order with time, direction, size, kind,
    method and id, the frame it pairs with and the latency, its findings beneath it (of each
    code the first few, then one line for the rest), and the server's stderr lines in between.
    As JSON every frame comes whole with all its findings. With --follow, the frames of a
    session being recorded as they are stored.

    Example:  mcptap show --db ~/mcp.db 0193b2 --format jsonl | jq -c 'select(.kind == "request") | {seq, method, latency_s}'

    Example:  mcptap show --db ~/mcp.db --follow time
    """
    from mcptap import store
    from mcptap.report import jsonout, transcript

    if follow:
        if TranscriptFormat(fmt) is not TranscriptFormat.text:
            raise fail("--follow prints the text transcript: leave out --format")
        _follow_session(db, session, full, stderr, max_per_code)
        return
    if session is None:
        raise fail("name the SESSION to show (or --follow the newest)")
    with one_line_errors():
        conn = store.open_existing(db)
        sid = store.resolve_session(conn, session)
        out = sys.stdout
        fmt = TranscriptFormat(fmt)
        if fmt is TranscriptFormat.text:
            width = shutil.get_terminal_size((160, 24)).columns
            for line in transcript.transcript(conn, sid, width=width, full=full, stderr=stderr, per_code=max_per_code):
                out.write(line + "\n")
        else:
            head, findings, frames = transcript.records(conn, sid, stderr=stderr)
            if fmt is TranscriptFormat.json:
                jsonout.write_document(out, [("session", head), ("findings", findings),
                                             ("frames", jsonout.Stream(frames))])
            else:
                jsonout.write_lines(out, [{"record": "session", **head, "findings": findings}])
                jsonout.write_lines(out, frames)
        out.flush()


def _follow_session(db: str, session: str | None, full: bool, stderr: bool, per_code: int) -> None:
    from mcptap.report import follow

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    width = shutil.get_terminal_size((160, 24)).columns
    with one_line_errors():
        try:
            follow.follow_session(db, session, write, width=width, full=full, stderr=stderr, per_code=per_code)
        except KeyboardInterrupt:  # Ctrl-C: the follow is over, as the user asked
            raise typer.Exit(0) from None


@app.command("export")
def export_cmd(
    db: DbOption = DEFAULT_DB,
    session: Annotated[Optional[list[str]], typer.Option("--session", metavar="ID",
                                                         help="Session to export (repeatable); default all.")] = None,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write here instead of stdout (- is stdout; FILE.gz: "
                                                       "gzip-compressed).")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT",
                                     help="jsonl (frame log), otlp (OTLP JSON), har (HAR 1.2, HTTP sessions).")
                   ] = "jsonl",
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
    frames), OTLP JSON (spans and metrics by OpenTelemetry's MCP semantic conventions), HAR 1.2;
    or send spans and metrics to an OpenTelemetry collector over OTLP/HTTP.

    Example:  mcptap export --db ~/mcp.db --session 0193b2 -o incident.jsonl

    Example:  mcptap export --db ~/mcp.db --otlp-endpoint http://127.0.0.1:4318 --header x-team=mcp
    """
    from mcptap import store
    from mcptap.cli import progress
    from mcptap.report import formats

    with one_line_errors():
        conn = store.open_existing(db)
        ids = [store.resolve_session(conn, s) for s in session] if session else store.session_ids(conn)
        if otlp_endpoint is not None:
            _send_otlp(conn, ids, otlp_endpoint, header or [], otlp_content, output)
            return
        chosen = formats.get(fmt, formats.FRAMES)
        write = chosen.write_function()
        for sid in ids if chosen.transports else ():
            transport = store.get_session(conn, sid)["transport"]
            if transport not in chosen.transports:
                raise fail(f"session {sid} is {transport}: {fmt} holds only {', '.join(chosen.transports)} sessions; "
                           f"export it as {' or '.join(formats.holding(transport))}")
        options = {"content": otlp_content} if chosen.name == "otlp" else {}
        with progress.meter("exporting", store.count_frames(conn, ids)) as shown, \
                formats.output(output, binary=chosen.binary) as out:
            write(conn, out, ids, progress=shown.advance, **options)


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
    from mcptap.errors import warn_stderr
    from mcptap.report import otlp, otlp_http

    with progress.meter("exporting", store.count_frames(conn, ids)) as shown:
        spans, points = otlp_http.send(otlp.requests(conn, ids, content=content, progress=shown.advance), endpoint,
                                       sent, warn=warn_stderr)
    typer.echo(f"sent {spans} spans and {points} histogram data points of {len(ids)} sessions to {endpoint}")


@app.command("import")
def import_cmd(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="Logs to import.")],
    db: DbOption = DEFAULT_DB,
    new_id: Annotated[bool, typer.Option("--new-id", help="Give imported sessions new ids, even if the "
                                                          "database already holds them.")] = False,
    keep_credentials: Annotated[bool, typer.Option("--keep-credentials", help="The same as --no-redact.")] = False,
    no_redact: NoRedactOption = False,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
) -> None:
    """Bring logs into the database: frame-log JSONL (including a recorder's spool), mitmproxy
    flow dumps (mitmdump -w) and HAR files. The format is detected from content. Each file goes
    in whole or not at all. Credentials are redacted on the way in, as when recording.

    Example:  mcptap import --db ~/mcp.db incident.jsonl capture.mitm browser.har
    """
    from mcptap import store
    from mcptap.cli import progress
    from mcptap.readers import importer
    from mcptap.wire.textsafe import printable

    def warn(message: str) -> None:
        sys.stderr.write(f"mcptap: warning: {printable(message)}\n")

    redaction = redaction_of(no_redact or keep_credentials, redact_key, redact_path)
    limit = max_frame_of(max_frame)
    with one_line_errors():
        for path in files:
            importer.detect_format(path)
        try:
            conn = store.connect(db)
        except (sqlite3.Error, OSError) as exc:
            raise fail(f"cannot open {db}: {exc}") from None
        for path in files:
            with progress.meter(f"importing {os.path.basename(path)}", total_bytes=os.path.getsize(path)) as shown:
                imported = importer.import_file(conn, path, new_id=new_id, warn=warn, progress=shown.update,
                                                keep_credentials=keep_credentials or no_redact,
                                                redaction=redaction, max_frame=limit)
            listed = len(imported) if len(imported) <= IMPORT_LISTED + 1 else IMPORT_LISTED
            rest = [0, 0]
            for n, s in enumerate(imported):
                if n >= listed:
                    rest[0] += s.frames
                    rest[1] += s.stderr_lines
                    continue
                verb = "merged into" if s.merged else "imported"
                typer.echo(f"{verb} session {printable(s.id)} ({printable(s.name)}): {s.frames} frames, "
                           f"{s.stderr_lines} stderr lines")
            if len(imported) > listed:
                typer.echo(f"and {len(imported) - listed:,} more sessions: {rest[0]:,} frames, {rest[1]:,} stderr lines")


IMPORT_LISTED = 20
"""Sessions of one file `mcptap import` names one line each; the rest are summed up in one line."""


@app.command("redact")
def redact_cmd(
    db: DbOption = DEFAULT_DB,
    session: Annotated[Optional[list[str]], typer.Option("--session", metavar="ID",
                                                         help="Only this session (repeatable); default all.")] = None,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
) -> None:
    """Apply redaction to a database already written (recorded with --no-redact, or before
    more keys or paths were wanted): credential members of frames, credential HTTP headers and
    the secrets of the servers' stderr lines and command lines are replaced by their keyed hash,
    each frame records which members were, the analysis of a changed session is dropped, and the
    file is rewritten so that no replaced byte survives.

    Example:  mcptap redact --db incident.db --redact-key '*token*' --redact-path '$.params.arguments.dsn'
    """
    from mcptap.cli import progress
    from mcptap.redaction import scrub
    from mcptap.wire.textsafe import printable

    redaction = redaction_of(False, redact_key, redact_path)
    with one_line_errors(), progress.meter() as shown:
        done = scrub.redact_database(db, sessions=session, redaction=redaction, progress=shown.advance,
                                     stage=shown.stage)
    typer.echo(f"redacted {sum(done.members.values())} members in {done.frames} frames and {done.exchanges} HTTP "
               f"exchanges, {done.stderr_lines} stderr lines and {done.commands} command lines of {done.sessions} "
               "sessions")
    for path, count in done.members.most_common():
        typer.echo(f"  {count:>6}  {printable(path)}")


@app.command("bundle")
def bundle_cmd(
    sessions: Annotated[Optional[list[str]], typer.Argument(
        metavar="[SESSION]...", help="Sessions to pack (id, unique id prefix or label); default all.")] = None,
    db: DbOption = DEFAULT_DB,
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE.zip", help="The zip file to write.")
                      ] = "mcptap-bundle.zip",
) -> None:
    """Pack sessions into one zip for a bug report: their frames redacted (and checked: nothing
    the default redaction replaces is left), the analysis as JSON and SARIF, the self-contained
    report, and the versions of mcptap, the client and the server. `mcptap import FILE.zip`
    reads it back.

    Example:  mcptap bundle --db ~/mcp.db time -o time-bug.zip
    """
    from mcptap.report import bundle
    from mcptap.wire.textsafe import printable

    with one_line_errors():
        manifest = bundle.write(db, output, sessions or None,
                                warn=lambda m: sys.stderr.write(f"mcptap: warning: {printable(m)}\n"))
    typer.echo(f"wrote {output}: {len(manifest['sessions'])} sessions")
