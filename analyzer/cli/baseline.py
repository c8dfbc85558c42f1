"""The commands about what servers declare: baseline (the definitions each server declared,
written as a reviewable JSON file that `analyze --baseline` judges later sessions against) and
cost (what each server's definitions and tool results take of a model's context)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Optional

import typer

from mcptap.cli.common import DbOption, DEFAULT_DB, SessionsArgument, app, one_line_errors


@app.command(short_help="Write the definitions each server declared, as a baseline file.")
def baseline(
    db: DbOption = DEFAULT_DB,
    server: Annotated[Optional[list[str]], typer.Option(
        "--server", metavar="NAME", help="Only this server (its serverInfo name, else the session's label; "
                                         "repeatable); default every one.")] = None,
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE",
                                        help="The baseline file to write (JSON, sorted keys, indented; - : stdout).")] = ...,
) -> None:
    """Write the tools, prompts, resources, resource templates and instructions each recorded
    server declared (its last listing of each), keyed by server name and version, as plain JSON
    to review in a pull request; `mcptap analyze --baseline FILE` then reports every definition
    that differs from it. Sessions in start order: a later one's definitions of the same server
    and version win.

    Example:  mcptap baseline --db ~/mcp.db --server time -o mcp-baseline.json
    """
    from mcptap import api, outfile
    from mcptap.wire.textsafe import json_text

    with one_line_errors():
        doc = api.baseline(db, server)
        with outfile.private_text(output) as fh:
            text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False)
            fh.write(json_text(text, indented=True) + "\n")  # bidi, format, control characters escaped


class CostFormat(str, Enum):
    text = "text"
    json = "json"


@app.command(short_help="Show what each server costs in a model's context, in bytes and tokens.")
def cost(
    sessions: SessionsArgument = None,
    db: DbOption = DEFAULT_DB,
    fmt: Annotated[CostFormat, typer.Option("--format", help="text, or json (the `cost` member of analyze's JSON "
                                                            "report).")] = CostFormat.text,
) -> None:
    """Per server and per session: the bytes and tokens of the instructions, of each tool, prompt,
    resource and resource template definition (a tool also as a model sees it: name, description,
    input schema), and of each tool's results (count, p50, max). The tokenizer is named: o200k_base
    when `mcptap[tokens]` is installed, else a bytes/4 estimate, labelled so.

    Example:  mcptap cost --db ~/mcp.db time
    """
    import sys

    from mcptap import api
    from mcptap.report import cost as cost_report

    with one_line_errors():
        figures = api.cost(db, sessions)
        if CostFormat(fmt) is CostFormat.json:
            cost_report.write_json(figures, sys.stdout)
        else:
            cost_report.write_text(figures, sys.stdout)
