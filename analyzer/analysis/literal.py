"""Literal searches in a frame's bytes, made before the analysis decides to parse it: `contains`,
whether any of a few byte strings occurs (`contains_folded`: in any ASCII case), answered by the native scanner (analyzer/_wirescan.c,
memmem) when it is built, else by `in`."""

from __future__ import annotations

try:
    from mcptap._wirescan import contains as _native, contains_folded as _native_folded
except ImportError:  # pragma: no cover - a build without a C compiler, or from older sources
    _native = _native_folded = None


def contains(raw: str | bytes, needles: tuple) -> bool:
    """Whether any of `needles` (bytes, or str for a str `raw`) occurs in `raw`."""
    if _native is not None and raw.__class__ is bytes:
        return _native(raw, needles)
    for needle in needles:
        if needle in raw:
            return True
    return False


def contains_folded(raw: bytes, needles: tuple[bytes, ...]) -> bool:
    """Whether any of `needles` (bytes in lower case) occurs in `raw.lower()`."""
    if _native_folded is not None and raw.__class__ is bytes:
        return _native_folded(raw, needles)
    low = raw.lower()
    for needle in needles:
        if needle in low:
            return True
    return False
