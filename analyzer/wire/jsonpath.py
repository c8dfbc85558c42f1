"""JSON paths, as `mcptap replay --ignore` and `--redact-path` take them: `$.result.content[0].text`,
with `*` for any one member or element (`$.result.content[*].text`), `..name` for `name` at any
depth (`$..timestamp`), `["odd name"]` for a member name that is not an identifier, and `$`
optional. A path is a tuple of member names (str) and array indexes (int).

Matching runs the patterns as a nondeterministic automaton: the state is the set of (pattern,
step) positions reached so far, advanced once per path step, so a path of n steps costs
n x the patterns' length whatever the number of `..` (no backtracking). A walk over a tree
carries the state down (`start`, `advance`, `covered`) and never matches a path again."""

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
        state = self.start()
        for step in path:
            if self.covered(state):
                return True
            state = self.advance(state, step)
            if not state:
                return False
        return self.covered(state)

    def start(self) -> frozenset:
        """The automaton's state before any step (the root, `$`)."""
        return self._closure((p, 0) for p in range(len(self.patterns)))

    def advance(self, state: frozenset, step) -> frozenset:
        """The state one step (a member name or an index) further down."""
        if not state:
            return state
        moved = []
        for p, i in state:
            pattern = self.patterns[p]
            if i == len(pattern):
                continue
            want = pattern[i]
            if want is DEEP:
                moved.append((p, i))  # `..` takes any number of steps
            elif want is ANY or (want == step and type(want) is type(step)):
                moved.append((p, i + 1))
        return self._closure(moved)

    def covered(self, state: frozenset) -> bool:
        """Whether a pattern has matched all of its steps: the node and all under it are matched."""
        return any(i == len(self.patterns[p]) for p, i in state)

    def _closure(self, positions) -> frozenset:
        out = set()
        for p, i in positions:
            out.add((p, i))
            pattern = self.patterns[p]
            while i < len(pattern) and pattern[i] is DEEP:  # `..` may also take no step
                i += 1
                out.add((p, i))
        return frozenset(out)

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
