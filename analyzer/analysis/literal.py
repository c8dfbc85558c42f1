"""Literal searches in a frame's bytes, made before the analysis decides to parse it: `contains`,
whether any of a few byte strings occurs, answered by the native scanner (analyzer/_wirescan.c,
memmem) when it is built, else by `in`."""

from __future__ import annotations

try:
    from mcptap._wirescan import contains as _native
except ImportError:  # pragma: no cover - a build without a C compiler, or from older sources
    _native = None


def contains(raw: str | bytes, needles: tuple) -> bool:
    """Whether any of `needles` (bytes, or str for a str `raw`) occurs in `raw`."""
    if _native is not None and raw.__class__ is bytes:
        return _native(raw, needles)
    for needle in needles:
        if needle in raw:
            return True
    return False
