"""The `mcptap` command line (docs/contract.md, Commands): a thin layer over the library.
Each command parses, calls one library function, and turns the library's MCPTapError into one
line on stderr and exit status 2."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap import __version__, extras, options
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


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             add_help_option=False, help=options.RECORD_HELP + "\n\n" + options.RECORD_EXAMPLE)
def record(ctx: typer.Context) -> None:
    """`mcptap record` has one parser, its own (analyzer/record.py): the script and `python -m mcptap`
    go there without typer; a caller of this app comes here and is forwarded."""
    from mcptap.record import main as record_main

    raise typer.Exit(record_main(list(ctx.args)))


@app.command()
def proxy(
    upstream: Annotated[str, typer.Option("--upstream", metavar="URL",
                                          help="The MCP server's URL (http:// or https://).")],
    db: DbOption = DEFAULT_DB,
    listen: Annotated[Optional[str], typer.Option("--listen", metavar="[HOST:]PORT",
                                                  help="Where to listen (default 127.0.0.1:8808; port 0: any free port).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", metavar="LABEL",
                                                help="A label for the sessions recorded.")] = None,
    keep_credentials: Annotated[bool, typer.Option(
        "--keep-credentials", help="The same as --no-redact.")] = False,
    no_redact: NoRedactOption = False,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="An https upstream: do not verify its certificate (a self-signed test server).")] = False,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
    allow_origin: AllowOriginOption = None,
) -> None:
    """Run a recording reverse proxy (mitmproxy) in front of an HTTP MCP server: Streamable HTTP,
    legacy HTTP+SSE and stateless 2026-07-28 traffic pass through unchanged, SSE events as they
    come, and every frame is recorded with its HTTP exchange. Point the host at the proxy's URL
    (the same path as the server's). Ctrl-C stops it.

    Example:  mcptap proxy --db ~/mcp.db --upstream http://127.0.0.1:8000/mcp --listen 8808
    """
    from mcptap import proxy as proxy_mod

    limit = max_frame_of(max_frame)
    with one_line_errors():
        extras.need("proxy", "mcptap proxy")
        status = proxy_mod.run(upstream, db, listen=listen, label=name, max_frame=limit,
                               redaction=redaction_of(no_redact or keep_credentials, redact_key, redact_path),
                               insecure=insecure, allow_origins=allow_origin or (),
                               on_ready=proxy_mod.say_listening(upstream, db))
    raise typer.Exit(status)


class ListFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


class TranscriptFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


PER_CODE = 5  # mcptap.report.PER_CODE, not imported here: that module pulls in the whole analysis
MaxPerCodeOption = Annotated[int, typer.Option(
    "--max-per-code", metavar="N", min=0,
    help="Findings of one code listed per session before the rest are summed up in one line (0: all). "
         "json and jsonl always have every finding.")]


@app.command()
def sessions(
    db: DbOption = DEFAULT_DB,
    fmt: Annotated[ListFormat, typer.Option(
        "--format", help="table; json: one document {\"sessions\": [...]}; jsonl: one session object per line.")
    ] = ListFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format jsonl (one JSON object per session "
                                                         "per line, as before --format).")] = False,
) -> None:
    """List the recorded sessions: id, label, transport, revision, start, duration, frames, finding
    counts (revision and counts once `mcptap analyze` has run), exit status. As JSON each session
    has typed values: times as Unix seconds (started_at) and ISO 8601 (started), duration_s,
    exit_status, and null for what is not known.

    Example:  mcptap sessions --db ~/mcp.db --format json | jq '.sessions[] | select(.errors > 0) | .id'
    """
    from mcptap import store
    from mcptap.report import columns, jsonout, transcript

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
    session: Annotated[str, typer.Argument(help="Session id, unique id prefix, or label (the newest).")],
    db: DbOption = DEFAULT_DB,
    full: Annotated[bool, typer.Option("--full", help="Print whole frames instead of one line each.")] = False,
    stderr: Annotated[bool, typer.Option("--stderr/--no-stderr", help="Interleave the server's stderr.")] = True,
    fmt: Annotated[TranscriptFormat, typer.Option(
        "--format", help="text; json: one document {\"session\", \"findings\", \"frames\"}; jsonl: the session, "
                         "then each frame and stderr line, one object per line.")] = TranscriptFormat.text,
    max_per_code: MaxPerCodeOption = PER_CODE,
) -> None:
    """Print a session's transcript: each frame in order with time, direction, size, kind,
    method and id, the frame it pairs with and the latency, its findings beneath it (of each
    code the first few, then one line for the rest), and the server's stderr lines in between.
    As JSON every frame comes whole with all its findings.

    Example:  mcptap show --db ~/mcp.db 0193b2 --format jsonl | jq -c 'select(.kind == "request") | {seq, method, latency_s}'
    """
    from mcptap import store
    from mcptap.report import jsonout, transcript

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


@app.command("export")
def export_cmd(
    db: DbOption = DEFAULT_DB,
    session: Annotated[Optional[list[str]], typer.Option("--session", metavar="ID",
                                                         help="Session to export (repeatable); default all.")] = None,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write here instead of stdout.")] = None,
) -> None:
    """Write sessions as frame-log JSONL; `mcptap import` of it gives back identical frames.

    Example:  mcptap export --db ~/mcp.db --session 0193b2 -o incident.jsonl
    """
    from mcptap import outfile, store
    from mcptap.analysis import progress
    from mcptap.readers import exporter

    with one_line_errors():
        conn = store.open_existing(db)
        ids = [store.resolve_session(conn, s) for s in session] if session else store.session_ids(conn)
        with progress.meter("exporting", store.count_frames(conn, ids)) as shown:
            if output is None:
                exporter.export(conn, sys.stdout, ids, progress=shown.advance)
                sys.stdout.flush()
            else:
                with outfile.private_text(output) as fh:
                    exporter.export(conn, fh, ids, progress=shown.advance)


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
    from mcptap.analysis import progress
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


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    sarif = "sarif"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


@app.command()
def analyze(
    ctx: typer.Context,
    files: Annotated[Optional[list[str]], typer.Argument(
        metavar="FILE", show_default=False,
        help="Frame-log files (or HTTP captures) to analyse: imported into a temporary database, or into --db "
             "when it is given on the command line, and only they are analysed.")] = None,
    db: DbOption = DEFAULT_DB,
    session: Annotated[Optional[str], typer.Option("--session", metavar="ID",
                                                   help="Only this session (id, id prefix or label).")] = None,
    revision: Annotated[Optional[str], typer.Option(
        "--revision", metavar="R",
        help="MCP revision to judge by where a session's own cannot be established (e.g. 2025-06-18).")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Report format.")] = ReportFormat.table,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding reaches this severity.")
                       ] = FailOn.error,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", metavar="CODE",
                                                        help="Silence a finding code (repeatable).")] = None,
    severity: Annotated[Optional[list[str]], typer.Option(
        "--severity", metavar="CODE=LEVEL", help="Report a code at another severity (repeatable).")] = None,
    config: Annotated[Optional[str], typer.Option(
        "--config", metavar="FILE", help="Policy file (TOML, [analyze] ignore/severity); default ./mcptap.toml.")] = None,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write the report here instead of stdout.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", metavar="N", min=1,
                                                help="Worker processes (default: one per CPU for large databases).")] = None,
    list_rules: Annotated[bool, typer.Option("--rules", help="List every finding code (code, group, severity, "
                                                             "summary, spec reference) and exit; with --format "
                                                             "json or jsonl as JSON.")] = False,
    max_per_code: MaxPerCodeOption = PER_CODE,
    sarif_root: Annotated[Optional[str], typer.Option(
        "--sarif-root", metavar="DIR", help="SARIF: file locations relative to this folder (uriBaseId %SRCROOT%; "
                                            "default: the current folder).")] = None,
) -> None:
    """Reclassify every recorded frame by JSON-RPC 2.0 and the session's MCP revision, pair
    requests and responses both ways, run every rule, print the report, and store the
    `messages`, `findings` and `analyses` tables. Exit 0 when no finding reaches --fail-on,
    1 when one does, 2 on bad usage or unreadable input.

    Example:  mcptap analyze --db ~/mcp.db --format sarif -o mcp.sarif --fail-on warning

    Example:  mcptap analyze incident.jsonl --format sarif -o incident.sarif
    """
    from mcptap import engine, outfile, report, store
    from mcptap.analysis import mcp, policy, progress

    if list_rules:
        if ReportFormat(fmt) is ReportFormat.sarif:
            raise fail("--rules lists in table, json or jsonl")
        report.write_rules(sys.stdout, ReportFormat(fmt).value)
        raise typer.Exit(0)
    with one_line_errors(), contextlib.ExitStack() as cleanup:
        if revision is not None and revision not in mcp.KNOWN_REVISIONS:
            raise fail(f"unknown revision {revision!r}; known: {', '.join(mcp.KNOWN_REVISIONS)}")
        if sarif_root is not None and not os.path.isdir(sarif_root):
            raise fail(f"--sarif-root: no folder {sarif_root}")
        rules_policy = policy.build(ignore or (), severity or (), config)
        sources = None
        if files:
            if session:
                raise fail("--session names a session of a database: it cannot be combined with FILE arguments")
            source = ctx.get_parameter_source("db")  # typer's own click or click's: compared by name
            if getattr(source, "name", None) != "COMMANDLINE":  # not $MCPTAP_DB either
                db = os.path.join(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-")), "analyze.db")
            sources = _import_for_analysis(db, files)
        conn = store.open_existing(db)
        ids = list(sources) if sources is not None else [store.resolve_session(conn, session)] if session else None
        total = store.count_frames(conn, ids)
        conn.close()
        with progress.meter("analyzing", total) as shown:
            result = engine.analyze(db, session=session, fallback_revision=revision, policy=rules_policy,
                                    progress=shown.advance, workers=jobs, sessions=ids if sources is not None else None)
        fmt, fail_on = ReportFormat(fmt).value, FailOn(fail_on).value
        if not result.stored:
            sys.stderr.write(f"mcptap: warning: results not stored in {db}: {result.not_stored_reason}\n")

        def write_report(out, color: bool = False) -> None:
            if fmt == "sarif":
                report.write_sarif(result, out, root=sarif_root, sources=sources)
            else:
                report.write(result, fmt, out, color=color, per_code=max_per_code)

        if output is None:
            write_report(sys.stdout, color=sys.stdout.isatty())
            sys.stdout.flush()
        else:
            with outfile.private_text(output) as fh:
                write_report(fh)
        raise typer.Exit(1 if report.reaches(result, fail_on) else 0)


def _import_for_analysis(db: str, files: list[str]) -> dict:
    """`analyze FILE...`: each file imported into `db` as `mcptap import` would, each frame's line
    kept; the imported sessions by id, each with its file (sarif.Source)."""
    from mcptap import store
    from mcptap.analysis import progress
    from mcptap.readers import importer
    from mcptap.report import sarif

    for path in files:
        importer.detect_format(path)
    try:
        conn = store.connect(db)
    except (sqlite3.Error, OSError) as exc:
        raise fail(f"cannot open {db}: {exc}") from None
    sources = {}
    try:
        for path in files:
            with progress.meter(f"importing {os.path.basename(path)}", total_bytes=os.path.getsize(path)) as shown:
                imported = importer.import_file(conn, path, locate=True, progress=shown.update,
                                                warn=lambda m: sys.stderr.write(f"mcptap: warning: {m}\n"))
            for s in imported:
                sources[s.id] = sarif.Source(path, s.lines if importer.detect_format(path) == "framelog" else None)
    finally:
        conn.close()
    return sources


@app.command("report")
def report_cmd(
    db: DbOption = DEFAULT_DB,
    session: Annotated[Optional[str], typer.Option("--session", metavar="ID",
                                                   help="One session (id, unique id prefix or label).")] = None,
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE", help="The HTML file to write.")] = "report.html",
) -> None:
    """Write one self-contained HTML report (no network fetches): the sessions, each finding
    linked to the frames around it, per-method latency, each session's sequence diagram. The
    database is analysed first if it has not been.

    Example:  mcptap report --db ~/mcp.db -o report.html
    """
    with one_line_errors():
        extras.need("notebook", "mcptap report")
        from mcptap.analysis import progress
        from mcptap.report import html as htmlreport

        try:
            with progress.meter() as shown:
                htmlreport.write(db, output, session=session, progress=shown.advance, stage=shown.stage)
        except OSError as exc:
            raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {output}")


class DiffFormat(str, Enum):
    text = "text"
    json = "json"


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
) -> None:
    """Send the client side of a recorded session to a live server (stdio or HTTP, whatever the
    recording's transport was; by default the server it was recorded from), answer the server's own requests with the recorded answers,
    record the replay as a new session linked to the original, and print a structural diff of
    every answer. Exit 0 when equal, 1 when different, 2 on error.

    Example:  mcptap replay --db ~/mcp.db 0193b2 --command "uvx mcp-server-time" --ignore '$.result.content[*].text'
    """
    from mcptap import replay as replay_mod

    with one_line_errors():
        outcome = replay_mod.replay(db, session, command=command, url=url, sse=sse, ignore=ignore or (),
                                    timeout=timeout, record=not no_record)
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

    def ready(url: str) -> None:
        sys.stderr.write(f"mcptap serve: session {session} on {url} (Ctrl-C stops)\n")
        sys.stderr.flush()

    with one_line_errors():
        try:
            faults = serve_mod.Faults(drop=set(drop or ()), delay=serve_mod.parse_delays(delay or ()),
                                      corrupt=set(corrupt or ()), pace=pace)
        except ValueError as exc:
            raise fail(str(exc)) from None
        status = serve_mod.serve(db, session, listen=listen, faults=faults, on_ready=ready,
                                 allow_origins=allow_origin or ())
    raise typer.Exit(status)


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
    from mcptap.analysis import progress
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


@app.command()
def demo(db: DbOption = DEFAULT_DB) -> None:
    """Record a live session with the bundled MCP server through `mcptap record`, driven by the
    bundled client, then print the session list and the transcript.

    Example:  mcptap demo --db /tmp/demo.db
    """
    with one_line_errors():
        extras.need("proxy", "mcptap demo (its HTTP session goes through mcptap proxy)")
        extras.need("notebook", "mcptap demo (it writes the HTML report)")
        from mcptap.demo.run import run_demo

        raise typer.Exit(run_demo(db))


@app.command("addon-path")
def addon_path() -> None:
    """Print the absolute path of the mitmproxy addon script, for the mitmdump (or mitmproxy,
    mitmweb) of this environment, in any of its modes.

    Example:  mitmdump -s "$(mcptap addon-path)" --set mcptap_db=$HOME/mcp.db
    """
    import importlib.util

    spec = importlib.util.find_spec("mcptap.addons.http.mitmdump_script")  # imports `mcptap.addons` alone, not mitmproxy
    typer.echo(os.path.abspath(spec.origin))


if __name__ == "__main__":
    app()
