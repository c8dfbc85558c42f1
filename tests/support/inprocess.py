"""`mcptap` run inside the test's own process, for the tests of what a command prints: the same
entry point as the installed command (analyzer/__main__.py: record's parser, the quick paths, then
the typer app), with stdin, stdout and stderr replaced by typer's (click's) CliRunner isolation, the
environment replaced whole for the run as a child process's would be, and the answer a
`subprocess.CompletedProcess` as tests.conftest.run gives. A command whose point is a process
(exit on a signal, a terminal, a server left running, the tee) is run as a real process instead:
`run(mcptap(...))`.

What a real process would do that this mirrors: an exception no command catches is written to
stderr as Python writes it (`Traceback (most recent call last):` ...) with exit status 1, so a test
that a command never shows a traceback can still fail; warnings are filtered as a plain `python`
filters them (not turned into errors as pytest's configuration does for the tests' own code); the
working directory, `sys.argv` and `sys.excepthook` are restored afterwards."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
import warnings

from click.testing import CliRunner

IN_PROCESS = True
"""False (MCPTAP_TEST_SUBPROCESS=1 in the environment) runs every `cli(...)` as a real process: the
same tests, to check that in-process runs tell nothing different."""
if os.environ.get("MCPTAP_TEST_SUBPROCESS") == "1":
    IN_PROCESS = False
PROCESS_ONLY = frozenset({"record", "proxy"})
"""Commands always run as a real process: the tee relays a server over the process's own file
descriptors and the proxy serves until a signal."""


@contextlib.contextmanager
def _environment(env: dict | None, cwd):
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_argv, saved_hook = sys.argv, sys.excepthook
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv, sys.excepthook = saved_argv, saved_hook


def _status(code) -> int:
    """The exit status `sys.exit(code)` gives a process."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def cli(*args: str, input: bytes | str = b"", env: dict | None = None, cwd=None,
        timeout: float | None = None, quick: bool = True) -> subprocess.CompletedProcess:
    """`mcptap ARGS` with `input` on stdin: (returncode, stdout, stderr) as bytes, as
    `run(mcptap(*args), input=..., env=..., cwd=...)` answers. `timeout` applies to a real process only.
    `quick=False`: the typer app itself, past the quick paths (analyzer/quick.py), to compare the two."""
    argv = ["mcptap", *args]
    data = input.encode() if isinstance(input, str) else input
    if not IN_PROCESS or args[:1] and args[0] in PROCESS_ONLY:
        from tests.conftest import PROCESS_TIMEOUT_S, mcptap

        command = mcptap(*args) if quick else [sys.executable, "-c", "from mcptap.cli import app; "
                                                                     f"app({list(args)!r}, prog_name='mcptap')"]
        return subprocess.run(command, input=data, capture_output=True, env=env, cwd=cwd,
                              timeout=timeout or PROCESS_TIMEOUT_S)
    if quick:
        from mcptap.__main__ import main
    else:
        def main() -> None:
            from mcptap.cli import app

            app(prog_name="mcptap")

    runner = CliRunner()
    with _environment(env, cwd), runner.isolation(input=data) as (out, err, _), warnings.catch_warnings():
        warnings.resetwarnings()  # a plain `python`'s filters (-W default for __main__ is moot here)
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        sys.argv = argv
        try:
            main()
            status = 0
        except SystemExit as done:
            status = _status(done.code)
        except KeyboardInterrupt:
            status = 130
            sys.stderr.write("Traceback (most recent call last):\nKeyboardInterrupt\n")
        except Exception as exc:  # as the interpreter would: the traceback on stderr, status 1
            sys.stderr.write("".join(traceback.format_exception(exc)))
            status = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(ValueError):  # a command that closed it
                    stream.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(argv, status, stdout, stderr)
