"""The commands that judge: analyze (the findings, as a table, JSON, JSONL or SARIF), report
(the HTML report) and diff (two recorded sessions compared)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap.errors import warn_stderr
from mcptap.report import formats
from mcptap.cli.common import (ColorOption, DbOption, DEFAULT_DB, DiffFormat, FilterOption, IgnorePathOption,
                               IgnoreOldOption, MaxPerCodeOption, PER_CODE, SessionAlias, SessionsArgument, app,
                               color_on, deprecated, diff_writer, fail, names_a_file, one_line_errors, sessions_of)


ReportFormat = Enum("ReportFormat", [(name, name) for name in ("text", *formats.names(formats.ANALYSIS))], type=str)
"""--format's choices: the analysis formats of the registry (report/formats.py), and text (table)."""


class Engine(str, Enum):
    local = "local"
    spark = "spark"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


# options `analyze` and `audit` share
IgnoreCodeOption = Annotated[Optional[list[str]], typer.Option("--ignore-code", metavar="CODE",
                                                             help="Silence a finding code (repeatable).")]
SeverityOption = Annotated[Optional[list[str]], typer.Option(
        "--severity", metavar="CODE=LEVEL", help="Report a code at another severity (repeatable).")]
PolicyOption = Annotated[Optional[str], typer.Option(
        "--config", metavar="FILE", help="Policy file (TOML, [analyze] ignore/severity); default ./mcptap.toml.")]
ReportOutputOption = Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write the report here instead of stdout.")]
JobsOption = Annotated[Optional[int], typer.Option("--jobs", metavar="N", min=1,
                                                help="Worker processes (default: one per CPU for large databases).")]


@app.command(short_help='Judge every frame and print the findings.')
def analyze(
    ctx: typer.Context,
    files: Annotated[Optional[list[str]], typer.Argument(
        metavar="FILE|SESSION", show_default=False,
        help="Frame-log files (or HTTP captures; - is stdin, .gz and .zst are decompressed) to analyse: imported "
             "into a temporary database, or into --db when it is given on the command line, and only they are "
             "analysed. An argument that names no file (and has no / nor a log's extension) is a SESSION of the "
             "database: id, unique id prefix or label; default every session.")] = None,
    db: DbOption = DEFAULT_DB,
    session: SessionAlias = None,
    revision: Annotated[Optional[str], typer.Option(
        "--revision", metavar="R",
        help="MCP revision to judge by where a session's own cannot be established (e.g. 2025-06-18).")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Report format (table is text).")
                   ] = ReportFormat.text,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")] = False,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding reaches this severity.")
                       ] = FailOn.error,
    ignore_code: IgnoreCodeOption = None,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", metavar="CODE", hidden=True,
                                                        help="The same as --ignore-code (deprecated).")] = None,
    severity: SeverityOption = None,
    config: PolicyOption = None,
    output: ReportOutputOption = None,
    jobs: JobsOption = None,
    list_rules: Annotated[bool, typer.Option("--rules", help="Alone: list every finding code (code, group, severity, "
                                                             "summary, spec reference) and exit; with --format "
                                                             "json or jsonl as JSON. Followed by GROUP[,GROUP] "
                                                             "(e.g. --rules security): run only the rules of "
                                                             "those groups.")] = False,
    max_per_code: MaxPerCodeOption = PER_CODE,
    baseline: Annotated[Optional[str], typer.Option(
        "--baseline", metavar="FILE", help="Report every tool, prompt, resource or instructions that differ from "
                                           "this baseline (written by `mcptap baseline`).")] = None,
    sarif_root: Annotated[Optional[str], typer.Option(
        "--sarif-root", metavar="DIR", help="SARIF: file locations relative to this folder (uriBaseId %SRCROOT%; "
                                            "default: the current folder).")] = None,
    color: ColorOption = None,
    engine_name: Annotated[Optional[Engine], typer.Option(
        "--engine", help="Analyse a Parquet dataset (FILE is its folder) with worker processes here (local) or on "
                         "Spark (spark); the derived tables are written back into the dataset.")] = None,
    master: Annotated[Optional[str], typer.Option(
        "--master", metavar="URL", help="--engine spark: the Spark master (default local[*]; spark://HOST:7077).")] = None,
    where: FilterOption = None,
) -> None:
    """Reclassify every recorded frame by JSON-RPC 2.0 and the session's MCP revision, pair
    requests and responses both ways, run every rule, print the report, and store the
    `messages`, `findings` and `analyses` tables. Exit 0 when no finding reaches --fail-on,
    1 when one does, 2 on bad usage or unreadable input.

    Example:  mcptap analyze --db ~/mcp.db --format sarif -o mcp.sarif --fail-on warning

    Example:  mcptap analyze incident.jsonl --format sarif -o incident.sarif

    Example:  mcptap analyze fleet/ --engine spark --master spark://head:7077
    Example:  mcptap analyze --db ~/mcp.db --filter 'method == "tools/call"'  (the findings on those frames)

    Example:  mcptap analyze --rules security incident.jsonl  (the security reading alone)
    """
    from mcptap import api, outfile
    from mcptap.cli import progress

    fmt = ReportFormat.text if ReportFormat(fmt) is ReportFormat.table else ReportFormat(fmt)
    if as_json:
        fmt = ReportFormat.json
    if ignore:
        deprecated("--ignore", "--ignore-code")
    groups = None
    if list_rules and files and _groups(files[0]) is not None:
        groups, files, list_rules = _groups(files[0]), files[1:], False
    if list_rules:
        if fmt in (ReportFormat.sarif, ReportFormat.junit):
            raise fail("--rules lists in text, json or jsonl")
        api.write_rules(sys.stdout, fmt.value)
        raise typer.Exit(0)
    args = files or []
    files = [a for a in args if names_a_file(a)]
    named = [*(a for a in args if not names_a_file(a)), *(session or ())]
    db_given = getattr(ctx.get_parameter_source("db"), "name", None) == "COMMANDLINE"  # not $MCPTAP_DB either
    with one_line_errors():
        if sarif_root is not None and not os.path.isdir(sarif_root):
            api.check_revision(revision)
            raise fail(f"--sarif-root: no folder {sarif_root}")
        with api.analyze(None if files and not db_given else db, files=files, sessions=named, revision=revision,
                         ignore=[*(ignore_code or ()), *(ignore or ())], severity=severity or (), config=config, groups=groups,
                         baseline=baseline, where=where, jobs=jobs, engine=engine_name and Engine(engine_name).value,
                         master=master, cost=fmt is ReportFormat.json, warn=warn_stderr,
                         meter=progress.meter) as done:
            fail_on = FailOn(fail_on).value
            if output is None:
                api.write_analysis(done, sys.stdout, fmt.value, color=color_on(color), per_code=max_per_code,
                                   root=sarif_root, fail_on=fail_on)
                sys.stdout.flush()
            else:
                with outfile.private_text(output) as fh:
                    api.write_analysis(done, fh, fmt.value, per_code=max_per_code, root=sarif_root, fail_on=fail_on)
            raise typer.Exit(1 if api.reaches(done, fail_on) else 0)


@app.command("report", short_help='Write the HTML report.')
def report_cmd(
    session_arg: SessionsArgument = None,
    db: DbOption = DEFAULT_DB,
    session: SessionAlias = None,
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE",
                                        help="The HTML file to write (- : stdout).")] = "report.html",
    max_frames: Annotated[int, typer.Option(
        "--max-frames", metavar="N", min=0,
        help="Frames the page holds in all: every frame up to N; past it, the frames within 20 of each "
             "finding and each session's first and last 100 (the page says what it left out).")] = 200_000,
    run: Annotated[Optional[str], typer.Option(
        "--run", metavar="RUN", help="One run (mcptap runs): its sessions, the page opening on their timeline, "
                                     "a lane per server.")] = None,
) -> None:
    """Write one self-contained HTML file that is a viewer (no network fetches): the sessions, a
    frame list with a display filter, a detail pane, deep links, a time-scaled sequence diagram,
    per-method latency. The database is analysed first if it has not been.

    Example:  mcptap report --db ~/mcp.db -o report.html

    Example:  mcptap report --db ~/mcp.db --run @1 -o run.html
    """
    from mcptap import api
    from mcptap.cli import progress

    named = sessions_of(session_arg, session)
    if run is not None and named:
        raise fail("name a run or sessions, not both")
    with one_line_errors():
        try:
            api.report_html(db, output, sessions=named, run=run, max_frames=max_frames, meter=progress.meter)
        except OSError as exc:
            raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    if output != "-":
        typer.echo(f"wrote {output}")


@app.command(short_help='Compare two recorded sessions.')
def diff(
    session_a: Annotated[str, typer.Argument(metavar="SESSION_A", help="The first session: id, unique id prefix, "
                                                                        "or label (the newest).")],
    session_b: Annotated[str, typer.Argument(metavar="SESSION_B", help="The second session, of --db-b if given.")],
    db: DbOption = DEFAULT_DB,
    db_b: Annotated[Optional[str], typer.Option("--db-b", metavar="PATH",
                                                help="The database of SESSION_B (default: --db).")] = None,
    ignore_path: IgnorePathOption = None,
    ignore: IgnoreOldOption = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="Report format (table is text).")] = DiffFormat.text,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")] = False,
    color: ColorOption = None,
) -> None:
    """Compare two recorded sessions message by message: the k-th request of a method in one
    direction with the k-th of the other session, and their answers; the same for notifications
    and frames that are not JSON. Print each difference by JSON path (ids are not compared).
    Exit 0 when equal, 1 when different, 2 on error.

    Example:  mcptap diff --db ~/mcp.db 0193a1 0193b2 --ignore-path '$..timestamp'

    Example:  mcptap diff --db yesterday.db --db-b today.db time time
    """
    from mcptap.replay import sessiondiff

    if ignore:
        deprecated("--ignore", "--ignore-path")
    paths = [*(ignore_path or ()), *(ignore or ())]
    with one_line_errors():
        outcome = sessiondiff.diff_sessions(db, session_a, db_b or db, session_b, paths)
        if DiffFormat(fmt) is DiffFormat.json or as_json:
            from mcptap.report import jsonout

            jsonout.write_document(sys.stdout, sessiondiff.as_json(outcome).items())
        else:
            sessiondiff.render(outcome, diff_writer(color_on(color)))
        sys.stdout.flush()
    raise typer.Exit(outcome.exit_status)


def _groups(arg: str) -> frozenset[str] | None:
    """The rule groups `--rules GROUP[,GROUP]` names (the argument after --rules), or None when it
    names none (a file or session instead)."""
    from mcptap.analysis.rules import GROUPS

    names = [g.strip() for g in arg.split(",")]
    if os.path.exists(arg) or not all(n in GROUPS for n in names):
        return None
    return frozenset(names)
