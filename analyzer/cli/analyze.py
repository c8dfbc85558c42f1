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
from mcptap.errors import warn_stderr
from mcptap.outfile import WriteOptions
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
    ignore_code: Annotated[Optional[list[str]], typer.Option("--ignore-code", metavar="CODE",
                                                             help="Silence a finding code (repeatable).")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", metavar="CODE", hidden=True,
                                                        help="The same as --ignore-code (deprecated).")] = None,
    severity: Annotated[Optional[list[str]], typer.Option(
        "--severity", metavar="CODE=LEVEL", help="Report a code at another severity (repeatable).")] = None,
    config: Annotated[Optional[str], typer.Option(
        "--config", metavar="FILE", help="Policy file (TOML, [analyze] ignore/severity); default ./mcptap.toml.")] = None,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="FILE",
                                                  help="Write the report here instead of stdout.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", metavar="N", min=1,
                                                help="Worker processes (default: one per CPU for large databases).")] = None,
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
    from mcptap import outfile, report
    from mcptap.analysis import mcp, policy

    fmt = ReportFormat.text if ReportFormat(fmt) is ReportFormat.table else ReportFormat(fmt)
    if as_json:
        fmt = ReportFormat.json
    if ignore:
        deprecated("--ignore", "--ignore-code")
    codes = [*(ignore_code or ()), *(ignore or ())]
    groups = None
    if list_rules and files and _groups(files[0]) is not None:
        groups, files, list_rules = _groups(files[0]), files[1:], False
    if list_rules:
        if fmt in (ReportFormat.sarif, ReportFormat.junit):
            raise fail("--rules lists in text, json or jsonl")
        report.write_rules(sys.stdout, fmt.value)
        raise typer.Exit(0)
    files, named = _files_and_sessions(files or [], session)
    with one_line_errors(), contextlib.ExitStack() as cleanup:
        if revision is not None and revision not in mcp.KNOWN_REVISIONS:
            raise fail(f"unknown revision {revision!r}; known: {', '.join(mcp.KNOWN_REVISIONS)}")
        if sarif_root is not None and not os.path.isdir(sarif_root):
            raise fail(f"--sarif-root: no folder {sarif_root}")
        rules_policy = policy.build(codes, severity or (), config, groups=groups)
        if where is not None:
            from mcptap.store import filterlang

            filterlang.parse(where)  # a bad filter fails before the analysis
        if baseline is not None:
            from mcptap.cli.baseline import read_baseline
            rules_policy.baseline = read_baseline(baseline)
        sources = None
        dataset_dir = _dataset_argument(files, named, engine_name, master)
        if dataset_dir is not None:
            result = _analyze_dataset(dataset_dir, engine_name, master, revision, rules_policy, jobs)
            db = dataset_dir
        else:
            result, sources, db, ids = analysed(ctx, cleanup, files, named, db=db, revision=revision,
                                                rules_policy=rules_policy, jobs=jobs, cost=fmt.value == "json")
        fmt, fail_on = fmt.value, FailOn(fail_on).value
        fmt = "table" if fmt == "text" else fmt
        if where is not None:
            from mcptap.engine import selection

            if dataset_dir is not None:
                raise fail("--filter selects frames of a database: a Parquet dataset takes none")
            if not result.stored:
                raise fail(f"--filter reads the stored analysis, which could not be stored: {result.not_stored_reason}")
            keep = selection.select(db, where, ids)
            result.findings = [f for f in result.findings if f.frame_seq is not None and f.frame_seq in keep.get(f.session_id, ())]
        if not result.stored:
            warn_stderr(f"results not stored in {db}: {result.not_stored_reason}")

        def write_report(out, color: bool = False) -> None:
            formats.get(fmt, formats.ANALYSIS).write(result, out, WriteOptions(
                color=color, per_code=max_per_code, root=sarif_root, sources=sources, fail_on=fail_on))

        if output is None:
            write_report(sys.stdout, color=color_on(color))
            sys.stdout.flush()
        else:
            with outfile.private_text(output) as fh:
                write_report(fh)
        raise typer.Exit(1 if report.reaches(result, fail_on) else 0)


def analysed(ctx: typer.Context, cleanup: contextlib.ExitStack, files: list[str], named: list[str], *, db: str,
             revision: str | None, rules_policy, jobs: int | None, cost: bool = False):
    """The analysis `analyze` and `audit` report, with a progress meter: FILEs imported into a
    temporary database (into --db when it is given on the command line) and only they analysed,
    else the named SESSIONs of `db`, else every session. (report, the imported sessions' files by
    id or None, the database analysed, the session ids analysed or None for all.) `cost`: the
    report's `cost` worked out too (what the servers' definitions take of a model's context)."""
    from mcptap import engine, store
    from mcptap.cli import progress

    sources = None
    if files:
        if named:
            raise fail(f"{named[0]!r} is no file: a SESSION of a database cannot be combined with FILE arguments")
        source = ctx.get_parameter_source("db")  # typer's own click or click's: compared by name
        if getattr(source, "name", None) != "COMMANDLINE":  # not $MCPTAP_DB either
            db = os.path.join(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-")), "analyze.db")
        sources = _import_for_analysis(db, files, cleanup)
    conn = store.open_existing(db)
    ids = list(sources) if sources is not None else store.resolve_sessions(conn, named) if named else None
    total = store.count_frames(conn, ids)
    conn.close()
    with progress.meter("analyzing", total) as shown:
        result = engine.analyze(db, fallback_revision=revision, policy=rules_policy,
                                progress=shown.advance, workers=jobs, sessions=ids, cost=cost)
    return result, sources, db, ids


def _dataset_argument(files: list[str], named: list[str], engine_name, master: str | None) -> str | None:
    """The Parquet dataset FILE names (a folder, or any FILE under --engine), else None."""
    if engine_name is None and not (len(files) == 1 and os.path.isdir(files[0])):
        if master is not None:
            raise fail("--master goes with --engine spark")
        return None
    if len(files) != 1 or named:
        raise fail("--engine analyses one Parquet dataset: give its folder, and nothing else, as FILE")
    if master is not None and engine_name is not Engine.spark:
        raise fail("--master goes with --engine spark")
    return files[0]


def _analyze_dataset(path: str, engine_name, master, revision, rules_policy, jobs):
    from mcptap.cli import progress
    from mcptap.engine import fleet

    extras.need("parquet", "a Parquet dataset")
    if engine_name is Engine.spark:
        extras.need("spark", "--engine spark")
    with progress.meter("analyzing") as shown:
        return fleet.analyze_dataset(path, engine=(engine_name or Engine.local).value, master=master,
                                     workers=jobs, fallback_revision=revision, policy=rules_policy,
                                     progress=shown.advance)


def _groups(arg: str) -> frozenset[str] | None:
    """The rule groups `--rules GROUP[,GROUP]` names (the argument after --rules), or None when it
    names none (a file or session instead)."""
    from mcptap.analysis.rules import GROUPS

    names = [g.strip() for g in arg.split(",")]
    if os.path.exists(arg) or not all(n in GROUPS for n in names):
        return None
    return frozenset(names)


def _files_and_sessions(args: list[str], alias: list[str] | None) -> tuple[list[str], list[str]]:
    """`analyze`'s arguments split into FILEs (`-`, a path that exists, or one that looks like a
    path: a / or a log's extension) and SESSIONs (the rest, and the hidden --session alias's)."""
    files, sessions = [], []
    for arg in args:
        (files if names_a_file(arg) else sessions).append(arg)
    return files, [*sessions, *(alias or ())]


def _import_for_analysis(db: str, files: list[str], cleanup: contextlib.ExitStack) -> dict:
    """`analyze FILE...`: each file imported into `db` as `mcptap import` would, each frame's line
    kept; the imported sessions by id, each with its file (sarif.Source)."""
    from mcptap import outfile, store
    from mcptap.cli import progress
    from mcptap.readers import importer
    from mcptap.report import formats, sarif

    if files.count("-") > 1:
        raise fail("- (stdin) can be read once")
    folder = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-"))
    plain = {}
    for n, path in enumerate(files):
        os.mkdir(os.path.join(folder, str(n)), 0o700)
        plain[path] = cleanup.enter_context(outfile.frames_in(path, os.path.join(folder, str(n))))
    cleanup.enter_context(outfile.named_as_given(plain))
    read_as = {path: formats.reader_for(plain[path]) for path in files}
    try:
        conn = store.connect(db)
    except (sqlite3.Error, OSError) as exc:
        raise fail(f"cannot open {db}: {exc}") from None
    sources = {}
    try:
        for path in files:
            with progress.meter(f"importing {os.path.basename(path)}",
                                total_bytes=os.path.getsize(plain[path])) as shown:
                imported = importer.import_file(conn, plain[path], locate=True, progress=shown.update, origin=path,
                                                warn=warn_stderr, kind=read_as[path].reader)
            for s in imported:
                sources[s.id] = sarif.Source(path, s.lines if read_as[path].located else None)
    finally:
        conn.close()
    return sources


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
) -> None:
    """Write one self-contained HTML file that is a viewer (no network fetches): the sessions, a
    frame list with a display filter, a detail pane, deep links, a time-scaled sequence diagram,
    per-method latency. The database is analysed first if it has not been.

    Example:  mcptap report --db ~/mcp.db -o report.html
    """
    named = sessions_of(session_arg, session)
    with one_line_errors():
        extras.need("notebook", "mcptap report")
        from mcptap.cli import progress
        from mcptap.report import html as htmlreport

        try:
            with progress.meter() as shown:
                htmlreport.write(db, output, sessions=named, progress=shown.advance, stage=shown.stage,
                                 max_frames=max_frames)
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
