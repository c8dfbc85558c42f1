"""The quick paths of the command line: `mcptap --version`, `mcptap sessions`, `mcptap show` and
`mcptap import` (its plain command lines, with stderr no terminal: no progress is drawn), read by
a small parser of their own and run without typer (whose every command loads pydantic to
coerce its options) and without the analysis a command does not show. analyzer/__main__.py hands
a command line here first; one this parser does not take whole (`--help`, an option it does not
know, a value it would have to coerce, shell completion) goes to the typer app, which parses it
as before and says what is wrong. The typer commands of the same names (analyzer/cli/database.py)
call the same `sessions`, `show` and `import_logs` below, so both ways print the same."""

from __future__ import annotations

import os
import sys

from mcptap import __version__, options

FORMATS = ("text", "table", "json", "jsonl")
"""`--format` of sessions and show (table: the same as text)."""
WHOLE = 160
"""The transcript's width when stdout is no terminal: the wide layout, no line cut (whatever COLUMNS says)."""
PER_CODE = 5  # mcptap.report.PER_CODE, not imported here: the report package is larger than this path


class Usage(Exception):
    """A command line the command refuses (one line, exit status 2)."""


class NotQuick(Exception):
    """A command line for the typer app to parse."""


# -- the parser ----------------------------------------------------------------------------------

_FLAGS = {
    "sessions": {"--json": ("as_json", True), "--color": ("color", True), "--no-color": ("color", False),
                 "--follow": ("follow", True), "-f": ("follow", True), "--wide": ("wide", True)},
    "show": {"--json": ("as_json", True), "--color": ("color", True), "--no-color": ("color", False),
             "--follow": ("follow", True), "-f": ("follow", True), "--full": ("full", True),
             "--stderr": ("stderr", True), "--no-stderr": ("stderr", False)},
    "import": {"--new-id": ("new_id", True)},
}
_VALUES = {
    "sessions": {"--db": "db", "--format": "fmt"},
    "show": {"--db": "db", "--format": "fmt", "--max-per-code": "max_per_code", "--filter": "where", "--run": "run"},
    "import": {"--db": "db", "--format": "fmt", "--from": "read_as"},
}
_DEFAULTS = {
    "sessions": {"fmt": "text", "as_json": False, "color": None, "follow": False, "wide": False},
    "show": {"session": None, "fmt": "text", "as_json": False, "color": None, "follow": False, "full": False,
             "stderr": True, "max_per_code": PER_CODE, "where": None},
    "import": {"fmt": "text", "new_id": False, "read_as": None},
}


def parse(command: str, args: list[str]) -> dict:
    """The keyword arguments of `sessions` or `show` for `args`, as the typer command would take
    them; NotQuick where the typer app must parse them (or say what is wrong with them)."""
    flags, values = _FLAGS[command], _VALUES[command]
    got = dict(_DEFAULTS[command])
    env = os.environ.get(options.DB_ENV)
    if env == "":
        raise NotQuick  # an empty variable: as click reads it
    got["db"] = env if env is not None else options.DEFAULT_DB
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in flags and not eq:
            key, flag = flags[name]
            got[key] = flag
        elif name in values:
            if not eq:
                if i >= len(args) or args[i].startswith("-"):
                    raise NotQuick
                value = args[i]
                i += 1
            got[values[name]] = value
        else:  # --help, --, an option of no quick path
            raise NotQuick
    if got["fmt"] not in FORMATS:
        raise NotQuick
    if command == "show":
        if len(positional) > 1:
            raise NotQuick
        got["session"] = positional[0] if positional else None
        count = got["max_per_code"]
        if type(count) is str:
            if not (count.isascii() and count.isdigit()):
                raise NotQuick
            got["max_per_code"] = int(count)
    elif command == "import":
        if not positional:
            raise NotQuick
        got["files"] = positional
    elif positional:
        raise NotQuick
    return got


def main(argv: list[str]) -> int | None:
    """Run `argv` (the arguments after `mcptap`) on a quick path: its exit status, or None when
    the typer app is to run it."""
    if argv == ["--version"]:
        sys.stdout.write(f"mcptap {__version__}\n")
        return 0
    if not argv or argv[0] not in _FLAGS or "_MCPTAP_COMPLETE" in os.environ:
        return None
    if argv[0] == "import" and on_terminal(sys.stderr):
        return None  # the typer command draws the import's progress there
    try:
        kwargs = parse(argv[0], argv[1:])
    except NotQuick:
        return None
    run = {"sessions": sessions, "show": show, "import": import_logs}[argv[0]]
    try:
        with one_line_errors():
            run(**kwargs)
    except Usage as exc:
        from mcptap.errors import say_error

        say_error(str(exc))
        return 2
    except Exit as done:
        return done.code
    except KeyboardInterrupt:  # as click says it
        sys.stderr.write("Aborted!\n")
        return 1
    return 0


# -- what both parsers share ---------------------------------------------------------------------

class Exit(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class one_line_errors:
    """A library error is Usage (one line, exit 2); a closed pipe (`| head`) ends the command
    quietly, with exit status 0, as other Unix tools do."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            return False
        import sqlite3

        from mcptap.errors import MCPTapError

        if issubclass(kind, MCPTapError):
            raise Usage(str(exc)) from None
        if issubclass(kind, sqlite3.DatabaseError):
            raise Usage(f"database error: {exc}") from None
        if issubclass(kind, BrokenPipeError):
            try:
                sys.stdout = open(os.devnull, "w", encoding="utf-8")
            except OSError:
                pass
            raise Exit(0) from None
        return False


def color_on(asked: bool | None, stream=None) -> bool:
    """Whether to colour `stream` (stdout): as asked by --color/--no-color, else when it is a
    terminal and NO_COLOR is not set (no-color.org) and TERM is not `dumb`."""
    if asked is not None:
        return asked
    stream = stream if stream is not None else sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def on_terminal(stream=None) -> bool:
    """Whether `stream` (stdout) is a terminal: tables are drawn for a reader; piped, they are
    plain lines, uncut, for programs."""
    stream = stream if stream is not None else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _plain(fmt: str) -> str:
    return "text" if fmt == "table" else fmt


def sessions(*, db: str, fmt: str = "text", as_json: bool = False, color: bool | None = None,
             follow: bool = False, wide: bool = False) -> None:
    """`mcptap sessions`: the session list as a table (on a terminal within its width, unless
    `wide`), JSON or JSON lines (or followed); raises Usage, MCPTapError, sqlite3.Error."""
    fmt = _plain(fmt)
    if follow:
        if fmt != "text" or as_json:
            raise Usage("--follow prints lines of text: leave out --format and --json")
        from mcptap.report import follow as follow_mod

        def write(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        try:
            follow_mod.follow_sessions(db, write)
        except KeyboardInterrupt:
            pass
        return
    if as_json and fmt not in ("text", "jsonl"):
        raise Usage("--json is --format jsonl: give one of them")
    if as_json:
        fmt = "jsonl"
    from mcptap import store
    from mcptap.report import jsonout, listing

    objects = listing.session_objects(store.open_existing(db))
    if fmt == "json":
        jsonout.write_document(sys.stdout, [("sessions", objects)])
    elif fmt == "jsonl":
        jsonout.write_lines(sys.stdout, objects)
    elif not objects:
        sys.stdout.write("(no sessions yet)\n")
    else:
        from mcptap.report import columns

        if on_terminal() and not wide:
            import time

            today = time.strftime("%Y-%m-%d", time.gmtime())
            columns.show(sys.stdout, listing.SCREEN_COLUMNS, [listing.screen_cells(o, today) for o in objects],
                         right={6, 7, 8}, terminal=True, colour=color_on(color), counts={7: "bold red", 8: "yellow"})
        else:
            columns.write(sys.stdout, listing.SESSION_COLUMNS, [listing.session_cells(o) for o in objects],
                          right={7, 8, 9}, colour=color_on(color))
        from mcptap.wire.textsafe import printable

        for o in objects:  # what a capture's live telemetry could not send
            said = listing.telemetry_text(o.get("telemetry"))
            if said is not None and "dropped " in said:
                sys.stdout.write(printable(f"session {o['handle']}: {said}") + "\n")
    sys.stdout.flush()


def show(*, db: str, session: str | None = None, fmt: str = "text", as_json: bool = False,
         color: bool | None = None, follow: bool = False, full: bool = False, stderr: bool = True,
         max_per_code: int = PER_CODE, where: str | None = None, run: str | None = None) -> None:
    """`mcptap show`: a session's transcript as text, JSON or JSON lines (or followed); with `run`,
    the run's frames across its servers in time order; raises Usage, MCPTapError, sqlite3.Error."""
    import shutil

    from mcptap.report import transcript

    fmt = _plain(fmt)
    if as_json:
        fmt = "jsonl"
    paint = transcript.painter(color_on(color))
    if follow:
        if fmt != "text":
            raise Usage("--follow prints the text transcript: leave out --format")
        if where is not None:
            raise Usage("--follow prints every frame: leave out --filter")
        from mcptap.report import follow as follow_mod

        def write(line: str) -> None:
            sys.stdout.write(paint(line) + "\n")
            sys.stdout.flush()

        width = shutil.get_terminal_size((160, 24)).columns if on_terminal() else WHOLE
        try:
            follow_mod.follow_session(db, session, write, width=width, full=full, stderr=stderr,
                                      per_code=max_per_code)
        except KeyboardInterrupt:  # Ctrl-C: the follow is over, as the user asked
            pass
        return
    if run is not None:
        if session is not None or where is not None:
            raise Usage("--run shows every frame of the run: leave out SESSION and --filter")
        return _show_run(db, run, fmt, paint)
    if session is None:
        raise Usage("name the SESSION to show (or --follow the newest)")
    from mcptap import store
    from mcptap.report import jsonout

    conn = store.open_existing(db)
    sid = store.resolve_session(conn, session)
    keep = None
    if where is not None:
        from mcptap.engine import selection

        keep = selection.select(db, where, [sid]).get(sid, set())
    out = sys.stdout
    if fmt == "text":
        width = shutil.get_terminal_size((160, 24)).columns if on_terminal() else WHOLE
        for line in transcript.transcript(conn, sid, width=width, full=full, stderr=stderr, per_code=max_per_code,
                                          keep=keep):
            out.write(paint(line) + "\n")
    else:
        head, findings, frames = transcript.records(conn, sid, stderr=stderr, keep=keep)
        if fmt == "json":
            jsonout.write_document(out, [("session", head), ("findings", findings),
                                         ("frames", jsonout.Stream(frames))])
        else:
            jsonout.write_lines(out, [{"record": "session", **head, "findings": findings}])
            jsonout.write_lines(out, frames)
    out.flush()


def _show_run(db: str, run: str, fmt: str, paint) -> None:
    """`mcptap show --run RUN`: the run's frames, across its servers, in time order."""
    import shutil

    from mcptap import store
    from mcptap.report import jsonout, runview
    from mcptap.store import runlist

    conn = store.open_existing(db)
    rid = runlist.resolve_run(conn, run)
    sids = runlist.run_sessions(conn, rid)
    out = sys.stdout
    if fmt == "text":
        width = shutil.get_terminal_size((160, 24)).columns if on_terminal() else None
        out.write(paint(runview.heading(next(r for r in runview.run_objects(conn) if r["run"] == rid))) + "\n")
        for line in runview.timeline_lines(conn, sids, width):
            out.write(paint(line) + "\n")
    else:
        head = next(r for r in runview.run_objects(conn) if r["run"] == rid)
        head["session_ids"] = sids
        if fmt == "json":
            jsonout.write_document(out, [("run", head), ("frames", jsonout.Stream(runview.timeline(conn, sids)))])
        else:
            jsonout.write_lines(out, [{"record": "run", **head}])
            jsonout.write_lines(out, runview.timeline(conn, sids))
    out.flush()


IMPORT_LISTED = 20
"""Sessions of one file `mcptap import` names one line each; the rest are summed up in one line."""


def import_logs(*, db: str, files: list[str], fmt: str = "text", new_id: bool = False, read_as: str | None = None,
                keep_credentials: bool = False, redaction=None, max_frame: int | None = None, meter=None) -> None:
    """`mcptap import`: the files brought into the database (mcptap.api.import_files), a line per
    session (the first IMPORT_LISTED of a file, then one for the rest), JSON or JSON lines;
    raises MCPTapError, sqlite3.Error."""
    from mcptap import api
    from mcptap.errors import warn_stderr
    from mcptap.wire.textsafe import printable

    fmt = _plain(fmt)
    each_file = api.import_files(db, files, new_id=new_id, keep_credentials=keep_credentials, redaction=redaction,
                                 max_frame=max_frame, read_as=read_as, warn=warn_stderr, meter=meter)
    if fmt != "text":
        from mcptap.report import jsonout

        objects = ({"file": path, "session": s.id, "name": s.name, "merged": bool(s.merged), "frames": s.frames,
                    "stderr_lines": s.stderr_lines} for path, imported, _ in each_file for s in imported)
        if fmt == "json":
            jsonout.write_document(sys.stdout, [("imported", jsonout.Stream(objects))])
        else:
            jsonout.write_lines(sys.stdout, objects)
        sys.stdout.flush()
        return
    for _, imported, _ in each_file:
        listed = len(imported) if len(imported) <= IMPORT_LISTED + 1 else IMPORT_LISTED
        rest = [0, 0]
        for n, s in enumerate(imported):
            if n >= listed:
                rest[0] += s.frames
                rest[1] += s.stderr_lines
                continue
            verb = "merged into" if s.merged else "imported"
            sys.stdout.write(f"{verb} session {printable(s.id)} ({printable(s.name)}): {s.frames} frames, "
                             f"{s.stderr_lines} stderr lines\n")
        if len(imported) > listed:
            sys.stdout.write(f"and {len(imported) - listed:,} more sessions: {rest[0]:,} frames, "
                             f"{rest[1]:,} stderr lines\n")
        sys.stdout.flush()
