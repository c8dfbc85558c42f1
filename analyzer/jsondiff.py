"""Structural differences between two JSON values (as analyzer/jsonwire parses them: numbers
compared as written), each named by its JSON path, with paths the user marks as volatile left
out.

Paths are written `$.result.content[0].text`. An ignore pattern uses the same form with `*` for
any one member or element (`$.result.content[*].text`), `..name` for `name` at any depth
(`$..timestamp`), and `$` optional; a pattern that names a member ignores everything under it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from analyzer import jsonwire

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


def format_path(path: Path) -> str:
    out = ["$"]
    for step in path:
        if type(step) is int:
            out.append(f"[{step}]")
        elif _PLAIN.fullmatch(step):
            out.append(f".{step}")
        else:
            out.append(f"[{jsonwire.to_json(step)}]")
    return "".join(out)


def short(value: Any, width: int = 80) -> str:
    text = jsonwire.to_json(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def around_difference(a: str, b: str, before: int = 24, width: int = 72) -> tuple[str, str]:
    """Two long strings as JSON text, each cut to the stretch around where they first differ."""
    ja, jb = jsonwire.to_json(a), jsonwire.to_json(b)
    if len(ja) <= width and len(jb) <= width:
        return ja, jb
    start = 0
    while start < min(len(ja), len(jb)) and ja[start] == jb[start]:
        start += 1
    start = max(0, start - before)

    def cut(text: str) -> str:
        piece = text[start:start + width]
        return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")

    return cut(ja), cut(jb)


def diff(recorded: Any, live: Any, ignore: "Ignore | None" = None, path: Path = ()) -> list[Change]:
    """Every difference from `recorded` to `live`, outside the ignored paths, in document order."""
    out: list[Change] = []
    _diff(recorded, live, path, ignore or Ignore(()), out)
    return out


def _diff(a: Any, b: Any, path: Path, ignore: "Ignore", out: list[Change]) -> None:
    if ignore.matches(path):
        return
    if type(a) is dict and type(b) is dict:
        for key, value in a.items():
            if key in b:
                _diff(value, b[key], path + (key,), ignore, out)
            elif not ignore.matches(path + (key,)):
                out.append(Change(REMOVED, path + (key,), recorded=value))
        for key, value in b.items():
            if key not in a and not ignore.matches(path + (key,)):
                out.append(Change(ADDED, path + (key,), live=value))
        return
    if type(a) is list and type(b) is list:
        for i in range(max(len(a), len(b))):
            if ignore.matches(path + (i,)):
                continue
            if i >= len(b):
                out.append(Change(REMOVED, path + (i,), recorded=a[i]))
            elif i >= len(a):
                out.append(Change(ADDED, path + (i,), live=b[i]))
            else:
                _diff(a[i], b[i], path + (i,), ignore, out)
        return
    if not _same(a, b):
        out.append(Change(CHANGED, path, recorded=a, live=b))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):  # 1 and 1.0 and true differ on the wire
        return type(a) in (float, jsonwire.NumberText) and type(b) in (float, jsonwire.NumberText) \
            and jsonwire.to_json(a) == jsonwire.to_json(b)
    return a == b


_PLAIN = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_STEP = re.compile(r"""
    \.\.(?P<deep>[A-Za-z_$][A-Za-z0-9_$-]*|\*)   # ..name: at any depth
  | \.(?P<name>[A-Za-z_$][A-Za-z0-9_$-]*|\*)     # .name
  | \[(?P<index>\d+|\*)\]                         # [0] [*]
  | \[(?P<quoted>"(?:[^"\\]|\\.)*")\]             # ["odd name"]
""", re.VERBOSE)

ANY, DEEP = object(), object()


class Ignore:
    """Compiled ignore patterns (see the module text); `matches(path)` when a pattern matches
    the path or one of its ancestors."""

    def __init__(self, patterns):
        self.patterns = [parse_pattern(p) for p in patterns]

    def matches(self, path: Path) -> bool:
        return any(_match(p, 0, path, 0) for p in self.patterns)


def parse_pattern(text: str) -> list:
    """`$.a[*]..b` -> ["a", ANY, DEEP, "b"]. Raises ValueError naming what it could not read."""
    src = text.strip()
    rest = src[1:] if src.startswith("$") else src
    if rest and not rest.startswith((".", "[")):
        rest = "." + rest
    steps: list = []
    pos = 0
    while pos < len(rest):
        m = _STEP.match(rest, pos)
        if m is None:
            raise ValueError(f"cannot read the JSON path {text!r} at {rest[pos:]!r}")
        pos = m.end()
        if m.group("deep") is not None:
            steps += [DEEP, ANY if m.group("deep") == "*" else m.group("deep")]
        elif m.group("name") is not None:
            steps.append(ANY if m.group("name") == "*" else m.group("name"))
        elif m.group("index") is not None:
            steps.append(ANY if m.group("index") == "*" else int(m.group("index")))
        else:
            steps.append(json.loads(m.group("quoted")))
    if not steps:
        raise ValueError(f"the JSON path {text!r} names the whole message; nothing would be compared")
    return steps


def _match(pattern: list, i: int, path: Path, j: int) -> bool:
    """Whether pattern[i:] matches a prefix of path[j:] (so that a match covers the subtree)."""
    if i == len(pattern):
        return True
    step = pattern[i]
    if step is DEEP:
        return any(_match(pattern, i + 1, path, k) for k in range(j, len(path)))
    if j == len(path):
        return False
    here = path[j]
    if step is ANY or (step == here and type(step) is type(here)):
        return _match(pattern, i + 1, path, j + 1)
    return False
