"""The commands that judge: analyze (the findings, as a table, JSON, JSONL or SARIF), report
(the HTML report) and diff (two recorded sessions compared)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import tempfile
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap import extras
from mcptap.cli.common import DbOption, DEFAULT_DB, DiffFormat, MaxPerCodeOption, PER_CODE, app, fail, one_line_errors


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    sarif = "sarif"
    junit = "junit"


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
    from mcptap.analysis import mcp, policy
    from mcptap.cli import progress

    if list_rules:
        if ReportFormat(fmt) in (ReportFormat.sarif, ReportFormat.junit):
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
            from mcptap.report import formats

            formats.get(fmt, formats.ANALYSIS).write(result, out, color=color, per_code=max_per_code, root=sarif_root,
                                                     sources=sources, fail_on=fail_on)

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
    from mcptap.cli import progress
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
        from mcptap.cli import progress
        from mcptap.report import html as htmlreport

        try:
            with progress.meter() as shown:
                htmlreport.write(db, output, session=session, progress=shown.advance, stage=shown.stage)
        except OSError as exc:
            raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {output}")


@app.command()
def diff(
    session_a: Annotated[str, typer.Argument(help="The first session: id, unique id prefix, "
                                                                        "or label (the newest).")],
    session_b: Annotated[str, typer.Argument(help="The second session, of --db-b if given.")],
    db: DbOption = DEFAULT_DB,
    db_b: Annotated[Optional[str], typer.Option("--db-b", metavar="PATH",
                                                help="The database of SESSION_B (default: --db).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option(
        "--ignore", metavar="PATH", help="A volatile member not to compare, as a JSON path: $.result.content[*].text, "
                                         "$..timestamp (repeatable).")] = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="Report format.")] = DiffFormat.text,
) -> None:
    """Compare two recorded sessions message by message: the k-th request of a method in one
    direction with the k-th of the other session, and their answers; the same for notifications
    and frames that are not JSON. Print each difference by JSON path (ids are not compared).
    Exit 0 when equal, 1 when different, 2 on error.

    Example:  mcptap diff --db ~/mcp.db 0193a1 0193b2 --ignore '$..timestamp'

    Example:  mcptap diff --db yesterday.db --db-b today.db time time
    """
    from mcptap.replay import sessiondiff

    with one_line_errors():
        outcome = sessiondiff.diff_sessions(db, session_a, db_b or db, session_b, ignore or ())
        if DiffFormat(fmt) is DiffFormat.json:
            from mcptap.report import jsonout

            jsonout.write_document(sys.stdout, sessiondiff.as_json(outcome).items())
        else:
            sessiondiff.render(outcome, typer.echo)
        sys.stdout.flush()
    raise typer.Exit(outcome.exit_status)
