"""JSON paths, as `mcptap replay --ignore` and `--redact-path` take them: `$.result.content[0].text`,
with `*` for any one member or element (`$.result.content[*].text`), `..name` for `name` at any
depth (`$..timestamp`), `["odd name"]` for a member name that is not an identifier, and `$`
optional. A path is a tuple of member names (str) and array indexes (int)."""

from __future__ import annotations

import json
import re

from mcptap.wire import jsonwire

Path = tuple  # of str (member names) and int (array indexes)


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


_PLAIN = re.compile(r"[^\W\d][\w$-]*|\$[\w$-]*")  # an identifier, letters of any script
_STEP = re.compile(r"""
    \.\.(?P<deep>(?:[^\W\d]|\$)[\w$-]*|\*)   # ..name: at any depth
  | \.(?P<name>(?:[^\W\d]|\$)[\w$-]*|\*)     # .name
  | \[(?P<index>\d+|\*)\]                         # [0] [*]
  | \[(?P<quoted>"(?:[^"\\]|\\.)*")\]             # ["odd name"]
""", re.VERBOSE)

ANY, DEEP = object(), object()


class Ignore:
    """Compiled patterns; `matches(path)` when a pattern matches the path or one of its
    ancestors (a pattern naming a member covers everything under it)."""

    def __init__(self, patterns):
        self.patterns = [parse_pattern(p) for p in patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, path: Path) -> bool:
        return any(_match(p, 0, path, 0) for p in self.patterns)

    def last_names(self) -> set[str] | None:
        """The member name each pattern ends with, or None when one ends in `*` or an index
        (then any member may match, and no name can rule a frame out)."""
        names = set()
        for p in self.patterns:
            if type(p[-1]) is not str:
                return None
            names.add(p[-1])
        return names


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
