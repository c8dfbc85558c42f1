"""The server the stdio tee runs (addons/stdio/tee.py), started by a module that imports only what
starting it needs: `mcptap record` starts the server first and imports the tee's machinery while
the server boots (a host waits for every server it spawns; bench/tee.py [0] measures it)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

from mcptap.errors import MCPTapError


class SpawnError(MCPTapError):
    """The server command could not be started (exit status 127 or 126, as a shell would)."""

    def __init__(self, message: str, exit_status: int):
        super().__init__(message)
        self.exit_status = exit_status


def die_with_parent():
    """A preexec function asking Linux to SIGKILL the server if the tee dies (even by SIGKILL),
    so the tee never leaves orphans. No-op where prctl is unavailable."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent:  # the tee died before prctl took effect
            os._exit(1)

    return preexec


def spawn(argv: list[str]) -> subprocess.Popen:
    """`argv` with its stdin, stdout and stderr piped to the tee, in a process group of its own (a
    Ctrl-C at a terminal reaches the tee, which forwards it), killed by Linux if the tee dies.
    SpawnError (127: not found, 126: cannot be run) when it cannot be started."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                bufsize=0, process_group=0, preexec_fn=die_with_parent())
    except FileNotFoundError:
        raise SpawnError(f"cannot run {argv[0]!r}: no such file or directory", 127) from None
    except PermissionError:
        raise SpawnError(f"cannot run {argv[0]!r}: permission denied", 126) from None
    except OSError as exc:
        raise SpawnError(f"cannot run {argv[0]!r}: {exc.strerror or exc}", 126) from None
