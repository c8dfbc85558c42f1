"""Output files written from recorded frames (`export -o`, `analyze -o`, `report -o`): created
readable and writable by their owner only (0600), as the database and the spool are, since
they hold what the traffic held."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import TextIO

from mcptap.errors import OutputError

MODE = 0o600


@contextlib.contextmanager
def private_text(path: str) -> Iterator[TextIO]:
    """`path` opened for writing UTF-8 text, truncated, mode 0600 (a regular file that was
    there before is made 0600 too, before anything is written). OSError on opening is an
    OutputError naming the file; one while writing propagates as it is."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, MODE)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not a terminal, a pipe or /dev/null
            os.fchmod(fd, MODE)
        fh = os.fdopen(fd, "w", encoding="utf-8")
    except OSError as exc:
        os.close(fd)
        raise OutputError(f"cannot make {path} private: {exc.strerror or exc}") from None
    with fh:
        yield fh
