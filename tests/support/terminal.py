"""A program in a real pseudo-terminal, for `mcptap tui`'s test and its bench (bench/tui.py): start
it at a size with some environment, read what it writes until a needle shows, type, and wait for
it to exit; killed when left."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
import time


class Terminal:
    """`argv` running in a pseudo-terminal of `size` (rows, columns) with `env` as its environment."""

    def __init__(self, argv: list[str], env: dict[str, str], *, size: tuple[int, int] = (25, 80), cwd: str | None = None):
        self.started = time.perf_counter()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
            if cwd:
                os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        self.seen = b""
        self.status: int | None = None

    def read(self, wait: float) -> bool:
        """Reads what is there within `wait` seconds into `seen`; False once the other end closed."""
        try:
            if select.select([self.fd], [], [], wait)[0]:
                self.seen += os.read(self.fd, 1 << 16)
            return True
        except OSError:  # the program's end closed: it is ending
            return False

    def until(self, needle: bytes, timeout: float) -> float:
        """Seconds from the start until `needle` was in what the program wrote."""
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            if time.monotonic() > deadline or not self.read(0.05):
                raise AssertionError(f"no {needle!r} within {timeout} s: {self.seen[-2000:]!r}")
        return time.perf_counter() - self.started

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def exit_code(self, timeout: float) -> int:
        """The program's exit status, once it has ended (reading what it still writes meanwhile)."""
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not end within {timeout} s")
            if not self.read(0.05):
                time.sleep(0.01)

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
