"""The command that reads a recording for security: audit (the findings of the `security` rules
alone, as a table, JSON or SARIF), over the analysis `analyze` runs (the library's `api.analyze`)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap.cli.analyze import FailOn, IgnoreCodeOption, JobsOption, PolicyOption, ReportOutputOption, SeverityOption
from mcptap.cli.common import (ColorOption, DbOption, DEFAULT_DB, SessionAlias, app, color_on, fail, names_a_file,
                               one_line_errors)
from mcptap.errors import warn_stderr
from mcptap.outfile import WriteOptions
from mcptap.report import formats


AuditFormat = Enum("AuditFormat", [(name, name) for name in ("text", *formats.names(formats.AUDIT))], type=str)
"""--format's choices: the audit formats of the registry (report/formats.py), and text (table)."""


@app.command(short_help="Read the recordings for security: poisoned tools, rug pulls, secrets, loops.")
def audit(
    ctx: typer.Context,
    files: Annotated[Optional[list[str]], typer.Argument(
        metavar="FILE|SESSION", show_default=False,
        help="Frame-log files (or HTTP captures) to audit, as `analyze` takes them, or SESSIONs of the database "
             "(id, unique id prefix or label); default every session.")] = None,
    db: DbOption = DEFAULT_DB,
    session: SessionAlias = None,
    fmt: Annotated[AuditFormat, typer.Option("--format", help="Report format (text is table).")] = AuditFormat.table,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a security finding reaches this "
                                                              "severity.")] = FailOn.error,
    ignore_code: IgnoreCodeOption = None,
    severity: SeverityOption = None,
    config: PolicyOption = None,
    output: ReportOutputOption = None,
    jobs: JobsOption = None,
    sarif_root: Annotated[Optional[str], typer.Option(
        "--sarif-root", metavar="DIR", help="SARIF: file locations relative to this folder (default: the current "
                                            "folder).")] = None,
    color: ColorOption = None,
) -> None:
    """Analyse the recordings as `mcptap analyze` does (and store the analysis), then print the
    findings of the security rules alone: per finding the server, the tool, the finding, where it
    is, what followed (the calls made after the model saw a poisoned description) and its evidence.
    SARIF carries GitHub's `security-severity` on every rule. Exit 0 when no security finding
    reaches --fail-on, 1 when one does, 2 on bad usage or unreadable input.

    Example:  mcptap audit --db ~/mcp.db

    Example:  mcptap audit incident.jsonl --format sarif -o security.sarif --fail-on warning
    """
    from mcptap import api, outfile
    from mcptap.cli import progress
    from mcptap.report import audit as reading

    name = "table" if AuditFormat(fmt) is AuditFormat.text else AuditFormat(fmt).value
    args = files or []
    files = [a for a in args if names_a_file(a)]
    named = [*(a for a in args if not names_a_file(a)), *(session or ())]
    db_given = getattr(ctx.get_parameter_source("db"), "name", None) == "COMMANDLINE"  # not $MCPTAP_DB either
    with one_line_errors():
        if sarif_root is not None and not os.path.isdir(sarif_root):
            raise fail(f"--sarif-root: no folder {sarif_root}")
        if files and named:
            raise fail(f"{named[0]!r} is no file: a SESSION of a database cannot be combined with FILE arguments")
        with api.analyze(None if files and not db_given else db, files=files, sessions=named,
                         ignore=ignore_code or (), severity=severity or (), config=config, jobs=jobs,
                         warn=warn_stderr, meter=progress.meter) as done:
            found = reading.read(done.report)
            writer = formats.get(name, formats.AUDIT)
            if output is None:
                writer.write(found, sys.stdout, WriteOptions(color=color_on(color), root=sarif_root,
                                                             sources=done.sources))
                sys.stdout.flush()
            else:
                with outfile.private_text(output) as fh:
                    writer.write(found, fh, WriteOptions(root=sarif_root, sources=done.sources))
            raise typer.Exit(1 if reading.reaches(found, FailOn(fail_on).value) else 0)
