"""`mcptap record`: its parser and the tee. A host spawns every server through this command, so it
starts light: analyzer/__main__.py hands `mcptap record ...` here before it imports anything else,
and this imports the tee (addons/stdio/tee.py) and the standard library's argparse, never typer or
the analysis (bench/tee.py measures spawn to first byte against a bare relay). The typer command of
the same name (analyzer/cli/capture.py) forwards here, so there is one parser for these options."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from mcptap import options
from mcptap.errors import say_error


def _indented(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.splitlines())


def parser():
    """The argparse parser of `mcptap record` (its help, and every command line `parse` does not
    read alone); argparse is imported here, when it is needed."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # as every mcptap command: one line, exit status 2
            say_error(f"{message} (see: mcptap record --help)")
            sys.exit(2)

    class HelpLayout(argparse.RawDescriptionHelpFormatter):
        """The help laid out as every other command's: `Usage:`, the text indented, `Arguments:`, `Options:`."""

        def add_usage(self, usage, actions, groups, prefix=None):
            super().add_usage(usage, actions, groups, prefix="Usage: ")

    parse = _Parser(prog="mcptap record", usage="mcptap record [OPTIONS] -- CMD [ARGS...]",
                    description=_indented(options.RECORD_HELP), epilog=_indented(options.RECORD_EXAMPLE),
                    allow_abbrev=False, add_help=False, formatter_class=HelpLayout)
    parse._positionals.title, parse._optionals.title = "Arguments", "Options"
    parse.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                       help="The MCP server command line, after --.")
    parse.add_argument("-h", "--help", action="help", help="Show this message and exit.")
    parse.add_argument("--db", metavar="PATH", help=options.DB_HELP)
    parse.add_argument("--name", metavar="LABEL", help="A label for the session.")
    parse.add_argument("--host-app", metavar="NAME", help="The application that starts this server (mcptap wrap "
                                                          "writes the host's name: claude-desktop, cursor...); "
                                                          "recorded with the host process, shown with its run.")
    parse.add_argument("--no-redact", action="store_true", help=options.NO_REDACT_HELP)
    parse.add_argument("--redact-key", metavar="NAME", action="append", default=[], help=options.REDACT_KEY_HELP)
    parse.add_argument("--redact-path", metavar="PATH", action="append", default=[], help=options.REDACT_PATH_HELP)
    parse.add_argument("--otlp-endpoint", metavar="URL", help=options.OTLP_ENDPOINT_HELP)
    parse.add_argument("--max-frame", metavar="SIZE", default=options.MAX_FRAME_DEFAULT,
                       help=options.MAX_FRAME_HELP + f" Default {options.MAX_FRAME_DEFAULT}.")
    return parse


def redaction_args(no_redact: bool, keys: list[str], paths: list[str]) -> list[str]:
    """The recorder process's redaction arguments (analyzer/redaction/__init__.py Redaction.to_args); a JSON
    path that cannot be read is a usage error. Without any of the options: none, and the redaction
    module (70 ms of start-up) is not imported."""
    if not (no_redact or keys or paths):
        return []
    from mcptap.redaction import Redaction

    try:
        return Redaction.from_options(no_redact, keys, paths).to_args()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def telemetry_recorder(endpoint: str | None, capture: str = "stdio") -> tuple[tuple[str, ...], dict] | None:
    """The recorder process that also sends live telemetry (analyzer/report/otlp_live.py), when
    `--otlp-endpoint` or an OTEL_EXPORTER_OTLP_*ENDPOINT variable asks for it, for the `capture`'s
    recorder (stdio, http); its settings are checked here (a usage error). None (nothing
    imported) when none does."""
    if not endpoint and not any(os.environ.get(name, "").strip() for name in options.OTLP_ENDPOINT_VARS):
        return None
    import importlib.util

    from mcptap.report import otlp_env

    try:
        found = importlib.util.find_spec("opentelemetry.proto")
    except ImportError:
        found = None
    if found is None:
        raise UsageError("live telemetry (--otlp-endpoint, OTEL_EXPORTER_OTLP_ENDPOINT) needs opentelemetry-proto: "
                         "pip install 'mcptap[otel]'")
    try:
        if otlp_env.resolve(endpoint) is None:
            return None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return ("mcptap.report.otlp_live", f"--{capture}"), {otlp_env.OPTION_ENV: endpoint or ""}


class UsageError(Exception):
    pass


_VALUES = {"--db": "db", "--name": "name", "--max-frame": "max_frame", "--redact-key": "redact_key",
           "--redact-path": "redact_path", "--host-app": "host_app", "--otlp-endpoint": "otlp_endpoint"}
"""The options that take a value, and their attribute."""


def parse(argv: list[str]) -> SimpleNamespace:
    """`mcptap record ARGV` parsed. The options that take a value are taken before argparse sees
    them, as `--name=VALUE` or `--name VALUE`, so that any value reads back unchanged (argparse
    drops a value `--` and refuses one that starts with `-`): up to the first `--` that is not
    such a value, or the first word that is not an option (the server's command). What is left
    is, as a host writes it, only `--no-redact` and the server's command: read without argparse
    (whose import, with the shutil its help formatter imports, is most of the parser's start-up);
    anything else (--help, an unknown option, no command) goes to argparse."""
    taken: list[tuple[str, str]] = []
    rest: list[str] = []
    at = 0
    while at < len(argv):
        word = argv[at]
        option, equals, value = word.partition("=")
        if word == "--" or not word.startswith("-"):
            rest += argv[at:]
            break
        if option in _VALUES and equals:
            taken.append((option, value))
        elif word in _VALUES and at + 1 < len(argv):
            taken.append((word, argv[at + 1]))
            at += 1
        else:
            rest.append(word)
        at += 1
    at_command = next((i for i, word in enumerate(rest) if word == "--" or not word.startswith("-")), len(rest))
    given, command = rest[:at_command], rest[at_command:]
    if (command[1:] if command[:1] == ["--"] else command) and set(given) <= {"--no-redact"}:
        args = SimpleNamespace(command=command, db=None, name=None, no_redact=bool(given), redact_key=[],
                               redact_path=[], max_frame=options.MAX_FRAME_DEFAULT, host_app=None,
                               otlp_endpoint=None)
    else:
        args = parser().parse_args(rest)
    for option, value in taken:
        attr = _VALUES[option]
        if isinstance(getattr(args, attr), list):
            getattr(args, attr).append(value)
        else:
            setattr(args, attr, value)
    return args


def main(argv: list[str]) -> int:
    """Run `mcptap record ARGV`; the exit status: the server's, 2 for bad input, 126 or 127 when
    the server cannot be started (as a shell says)."""
    from mcptap.addons.stdio.server import SpawnError, spawn
    from mcptap.errors import MCPTapError

    args = parse(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        limit = None  # the default: the recorder's own (not parsed here, before the server starts)
        if args.max_frame != options.MAX_FRAME_DEFAULT:
            from mcptap.wire.bounded import parse_size

            try:
                limit = parse_size(args.max_frame)
            except ValueError as exc:
                raise UsageError(f"--max-frame: {exc}") from None
        redaction = redaction_args(args.no_redact, args.redact_key, args.redact_path)
        db = args.db or os.environ.get(options.DB_ENV) or options.DEFAULT_DB
        if not command:
            raise UsageError("no server command given (usage: mcptap record [--db PATH] -- CMD [ARGS...])")
        server = spawn(command)  # first: the server boots while the tee's machinery is imported
        try:
            recorder = telemetry_recorder(args.otlp_endpoint)
        except UsageError:
            server.kill()
            server.wait()
            raise
        from mcptap.addons.stdio.tee import Tee

        return Tee(command, db, args.name, redaction_args=redaction, max_frame=limit, server=server,
                   host_app=args.host_app, recorder=recorder).run()
    except SpawnError as exc:
        say_error(str(exc))
        return exc.exit_status
    except (UsageError, MCPTapError) as exc:
        say_error(str(exc))
        return 2
