"""The library's progress meters: a face passes its own (cli/progress.py's `meter`); the
default shows nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


class _Quiet:
    """A progress meter that shows nothing (the library's default)."""

    def stage(self, *args, **kwargs) -> None:
        pass

    update = advance = stage


@contextlib.contextmanager
def _quiet(*args, **kwargs) -> Iterator[_Quiet]:
    yield _Quiet()


Meter = Callable[..., contextlib.AbstractContextManager]
"""A progress meter's factory, called as `meter(description, total, total_bytes=...)`; what it
gives has `update(frames, bytes)`, `advance(n)` and `stage(description, total)` (cli/progress.py's
`meter`; default: nothing shown)."""
