"""The CLI reference, docs/cli.md, generated from the command definitions themselves:
`python -m mcptap.cli.clidocs > docs/cli.md` (tests/project/test_docs.py fails when it is stale)."""

from __future__ import annotations

import functools
import sys

import typer

from mcptap.cli import app


def _usage(command, ctx) -> str:
    return " ".join(command.collect_usage_pieces(ctx))


def _param_line(param, ctx) -> str | None:
    """A row of the options table: the names and metavar, and the help, as `--help` shows them."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, help_text = record
    help_text = " ".join(help_text.split()).replace("|", "\\|")
    return f"| `{names}` | {help_text} |"


def _record_help() -> str:
    from mcptap import record

    parser = record.parser()
    parser.formatter_class = functools.partial(parser.formatter_class, width=100)
    return parser.format_help()


def markdown() -> str:
    """docs/cli.md: every command's usage, help and options, from the commands themselves."""
    group = typer.main.get_command(app)
    root = group.context_class(group, info_name="mcptap")
    out = ["# CLI reference", "",
           "Generated from the command definitions by `python -m mcptap.cli.clidocs > docs/cli.md`; do not edit",
           "by hand. `mcptap COMMAND --help` prints the same. How every command speaks (formats, SESSION,",
           "pipes, exit codes) is in [Commands and conventions](commands.md).", "",
           ]
    for name in group.list_commands(root):
        command = group.get_command(root, name)
        if command is None or command.hidden:
            continue
        if name == "record":  # its own light parser (mcptap.record: a host spawns every server through it)
            out += [f"## mcptap {name}", "", "```", _record_help().rstrip(), "```", ""]
            continue
        ctx = command.context_class(command, info_name=name, parent=root)
        out += [f"## mcptap {name}", "", "```", f"mcptap {name} {_usage(command, ctx)}".rstrip(), "```", ""]
        out += [(command.help or "").strip().replace("\b\n", ""), ""]
        rows = [row for p in command.params if not p.hidden and (row := _param_line(p, ctx))]
        if rows:
            out += ["| argument or option | what |", "| --- | --- |", *rows, ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
