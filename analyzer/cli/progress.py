"""Progress of long commands (import, analyze, export, report, redact) on stderr, counted in
frames ("analyzing 340,000/1,000,000 frames"), over bytes only where frames cannot be counted
ahead (import: frames read and bytes of the file); drawn with rich when stderr is a terminal,
nothing at all when it is not.

Library functions take plain callbacks (`progress(n)`: n more frames done; `stage(what,
total)`: a new step); a Meter provides both. It draws without a thread of its own (redrawn at
most REFRESH_S apart, as the work reports), so a command may still fork worker processes."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import IO

REFRESH_S = 0.1


def _count(done: int, total: int | None, unit: str) -> str:
    return f"{done:,} {unit}" if total is None else f"{done:,}/{total:,} {unit}"


def _megabytes(done: int, total: int | None) -> str:
    return f"{done / 1e6:,.1f} MB" if total is None else f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB"


class Meter:
    """One line of progress: a description, a bar, the frames done (of how many), and for a file
    read the bytes done of its size. Silent (every call a no-op) when not `shown`."""

    def __init__(self, stream: IO[str], shown: bool):
        self.shown = shown
        self.stream = stream
        self.bar = None
        self.task = None
        self.frames = 0
        self.total: int | None = None
        self.bytes: int | None = None
        self.total_bytes: int | None = None
        self.unit = "frames"
        self.last = 0.0

    def start(self) -> None:
        if not self.shown:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                            TimeRemainingColumn(), console=Console(file=self.stream), transient=True,
                            auto_refresh=False, redirect_stdout=False)  # stdout may be the command's output
        # stderr written meanwhile (a warning) goes above the line, through rich
        self.bar.start()

    def stop(self) -> None:
        if self.bar is not None:
            self._draw(force=True)
            self.bar.stop()
            self.bar = None

    def stage(self, description: str, total: int | None = None, *, unit: str = "frames",
              total_bytes: int | None = None) -> None:
        """A new step: `total` frames to do (None: not known ahead), or `total_bytes` of a file."""
        if self.bar is not None and self.task is not None:
            self._draw(force=True)  # the last step as it ended
            self.bar.remove_task(self.task)
        self.frames, self.total, self.unit = 0, total, unit
        self.bytes, self.total_bytes = (0 if total_bytes is not None else None), total_bytes
        if self.bar is None:
            return
        from rich.markup import escape

        from mcptap.wire.textsafe import printable

        # a file's name is shown as text: escaped for the terminal, and never read as rich markup
        self.task = self.bar.add_task(escape(printable(description)),
                                      total=total_bytes if total_bytes is not None else total,
                                      count=self._text())
        self._draw(force=True)

    def advance(self, frames: int) -> None:
        """`frames` more done."""
        self.frames += frames
        self._draw()

    def update(self, frames: int, bytes_done: int | None = None) -> None:
        """So many frames (and bytes of the file) done in all."""
        self.frames = frames
        if bytes_done is not None:
            self.bytes = bytes_done
        self._draw()

    def _text(self) -> str:
        text = _count(self.frames, self.total, self.unit) if self.frames or self.total is not None else ""
        if self.bytes is not None:
            text += ("  " if text else "") + _megabytes(self.bytes, self.total_bytes)
        return text

    def _draw(self, *, force: bool = False) -> None:
        if self.bar is None or self.task is None:
            return
        now = time.monotonic()
        if not force and now - self.last < REFRESH_S:
            return
        self.last = now
        completed = self.bytes if self.total_bytes is not None else self.frames
        self.bar.update(self.task, completed=completed, count=self._text())
        self.bar.refresh()


@contextlib.contextmanager
def meter(description: str | None = None, total: int | None = None, *, unit: str = "frames",
          total_bytes: int | None = None, stream: IO[str] | None = None) -> Iterator[Meter]:
    """A Meter on stderr (or `stream`), drawn only when that is a terminal; its first step
    started when `description` is given."""
    stream = stream if stream is not None else sys.stderr
    try:
        shown = stream.isatty()
    except (AttributeError, ValueError, OSError):
        shown = False
    m = Meter(stream, shown)
    m.start()
    try:
        if description is not None:
            m.stage(description, total, unit=unit, total_bytes=total_bytes)
        yield m
    finally:
        m.stop()
