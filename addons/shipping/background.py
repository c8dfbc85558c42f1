"""What the capture's recorder processes (addons/stdio/recorder.py, addons/http/recorder.py) do
before and around their work: no pandas or numpy (sqlite-utils imports them when it can, for a
migration this process does not need: 45 MB), the lowest CPU priority (recording is background
work: the processes it serves run first), deaf to SIGINT and SIGHUP (the process that feeds it
decides when recording ends, by EOF), and a bug said in one line."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

import mcptap


def recorder_env() -> dict[str, str]:
    """The environment for a recorder process (`python -P -m mcptap.addons...`): this one, with
    the folder this `mcptap` was imported from first on PYTHONPATH when it is an installed package
    folder (-P and PYTHONPATH: never an `mcptap` that happens to be in the working folder, and the
    same one as here even when this process found it on a path of its own, as mitmdump does for a
    script). An editable install has no such folder: its .pth, in this interpreter, finds it."""
    env = dict(os.environ)
    package = os.path.dirname(os.path.abspath(mcptap.__file__))
    if os.path.basename(package) == "mcptap":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (os.path.dirname(package), env.get("PYTHONPATH"))))
    return env


def idle() -> None:
    """This process is background work from now on: the lowest CPU priority, and no pandas or
    numpy. (Not before a recorder's imports: measured, it bought no start-up, and a recorder
    starved at SCHED_IDLE on a busy machine is not ready when the session's first frames come.)"""
    for optional in ("pandas", "numpy"):
        sys.modules.setdefault(optional, None)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def recorder_main(record_from: Callable, module: str, what: str) -> None:
    """Run `record_from(stdin, DB, redaction, max_frame=N)` as `python -m MODULE DB [--max-frame N]
    [REDACTION ARGS]` and exit with its status (the arguments: analyzer/redaction/__init__.py
    Redaction.to_args; --max-frame: analyzer/wire/bounded.py)."""
    idle()
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    if len(sys.argv) < 2:
        sys.stderr.write(f"usage: python -m {module} DB [--no-redact] [--redact-key K]... [--redact-path P]... < records\n")
        sys.exit(2)
    from mcptap.wire.bounded import DEFAULT_MAX_FRAME
    from mcptap.redaction import Redaction

    args = sys.argv[2:]
    max_frame = DEFAULT_MAX_FRAME
    if args[:1] == ["--max-frame"] and len(args) > 1 and args[1].isdigit():
        max_frame, args = int(args[1]), args[2:]
    try:
        status = record_from(sys.stdin.fileno(), sys.argv[1], Redaction.from_args(args), max_frame=max_frame)
    except Exception as exc:  # a bug: one line (whoever feeds it says what could not be handed over)
        sys.stderr.write(f"mcptap: error: {what} failed: {type(exc).__name__}: {exc}\n")
        status = 1
    sys.exit(status)


def hurry(pid: int) -> None:
    """The recording is ending: the recorder process `pid` (each of its threads: the policy is
    a thread's) runs at the normal priority from now on, so that what is still queued is stored
    at the machine's pace, not at what a busy machine leaves to idle work (best effort: where
    the platform or the limits refuse, it stays idle)."""
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        threads = [pid]
    for tid in threads:
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except (AttributeError, OSError):
            pass


def wait_hurried(proc, every: float = 1.0) -> int:
    """Wait for the recorder process `proc` (a subprocess.Popen) to end, hurried (`hurry`) again
    each `every` seconds: one still starting when the recording ended sets itself idle after the
    first `hurry`, and on a busy machine an idle process may wait for the CPU indefinitely."""
    import subprocess

    while True:
        try:
            return proc.wait(every)
        except subprocess.TimeoutExpired:
            hurry(proc.pid)

