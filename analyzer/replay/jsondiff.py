"""Structural differences between two JSON values (as analyzer/wire/jsonwire.py parses them: numbers
compared as written), each named by its JSON path, with paths the user marks as volatile left
out.

Paths are written `$.result.content[0].text`; ignore patterns are analyzer/wire/jsonpath.py patterns, and
a pattern that names a member ignores everything under it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcptap.wire import jsonwire
from mcptap.wire.jsonpath import Ignore, format_path

ADDED, REMOVED, CHANGED = "added", "removed", "changed"

Path = tuple  # of str (member names) and int (array indexes)


@dataclass(frozen=True)
class Change:
    op: str  # added | removed | changed
    path: Path
    recorded: Any = None  # the value before (removed, changed)
    live: Any = None  # the value after (added, changed)

    @property
    def where(self) -> str:
        return format_path(self.path)

    def __str__(self) -> str:
        if self.op == ADDED:
            return f"added    {self.where}: {short(self.live)}"
        if self.op == REMOVED:
            return f"removed  {self.where} (was {short(self.recorded)})"
        if type(self.recorded) is str and type(self.live) is str:
            a, b = around_difference(self.recorded, self.live)
            return f"changed  {self.where}: {a} -> {b}"
        return f"changed  {self.where}: {short(self.recorded)} -> {short(self.live)}"


def short(value: Any, width: int = 80) -> str:
    """JSON text of a value cut to `width` characters (a long string is cut before it is
    written: a 100 MB answer is never written whole to show 80 characters of it)."""
    if type(value) is str and len(value) > width:
        value = value[:width]
    text = jsonwire.to_json(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def around_difference(a: str, b: str, before: int = 24, width: int = 72) -> tuple[str, str]:
    """Two long strings as JSON text, each cut to the stretch around where they first differ
    (found on the strings, a block at a time; only the stretch is written as JSON)."""
    if len(a) <= width and len(b) <= width:
        ja, jb = jsonwire.to_json(a), jsonwire.to_json(b)
        if len(ja) <= width and len(jb) <= width:
            return ja, jb
    start = _common_prefix(a, b)
    start = max(0, start - before)

    def cut(text: str) -> str:
        piece = jsonwire.to_json(text[start:start + width])[1:-1][:width - (start == 0)]
        return ("…" if start else "") + '"' * (start == 0) + piece + ("…" if start + width < len(text) else '"')

    return cut(a), cut(b)


def _common_prefix(a: str, b: str, block: int = 4096) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[i:i + block] == b[i:i + block]:
        i += block
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


def diff(recorded: Any, live: Any, ignore: "Ignore | None" = None, path: Path = ()) -> list[Change]:
    """Every difference from `recorded` to `live`, outside the ignored paths, in document order.
    The ignore patterns' state is carried down the walk: each node is matched once, in steps."""
    out: list[Change] = []
    ignore = ignore or Ignore(())
    state = ignore.start()
    for step in path:
        state = ignore.advance(state, step)
    try:
        _diff(recorded, live, path, ignore, state, out)
    except RecursionError:  # nested past the interpreter's stack: compared whole
        out = [] if jsonwire.to_json(recorded) == jsonwire.to_json(live) else [Change(CHANGED, path, recorded, live)]
    return out


def _diff(a: Any, b: Any, path: Path, ignore: "Ignore", state: frozenset, out: list[Change]) -> None:
    if ignore.covered(state):
        return
    if type(a) is dict and type(b) is dict:
        for key, value in a.items():
            below = ignore.advance(state, key)
            if key in b:
                _diff(value, b[key], path + (key,), ignore, below, out)
            elif not ignore.covered(below):
                out.append(Change(REMOVED, path + (key,), recorded=value))
        for key, value in b.items():
            if key not in a and not ignore.covered(ignore.advance(state, key)):
                out.append(Change(ADDED, path + (key,), live=value))
        return
    if type(a) is list and type(b) is list:
        for i in range(max(len(a), len(b))):
            below = ignore.advance(state, i)
            if ignore.covered(below):
                continue
            if i >= len(b):
                out.append(Change(REMOVED, path + (i,), recorded=a[i]))
            elif i >= len(a):
                out.append(Change(ADDED, path + (i,), live=b[i]))
            else:
                _diff(a[i], b[i], path + (i,), ignore, below, out)
        return
    if not _same(a, b):
        out.append(Change(CHANGED, path, recorded=a, live=b))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):  # 1 and 1.0 and true differ on the wire
        return type(a) in (float, jsonwire.NumberText) and type(b) in (float, jsonwire.NumberText) \
            and jsonwire.to_json(a) == jsonwire.to_json(b)
    return a == b
