"""JSON with comments and trailing commas (what VS Code's settings.json and mcp.json allow; plain
JSON is a case of it), read into values that know where their text is, so that a file can be
changed at one member and every other byte kept: comments, order, white space.

`parse(text)` gives a Node: for an object its members (key, key node, value node) in order, for an
array its items, for a scalar its value; each node's `start` and `end` are offsets in the text.
`edit(text, [(start, end, replacement), ...])` applies replacements that do not overlap."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\ufeff]+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<literal>true|false|null)
  | (?P<punct>[{}\[\]:,])
""", re.VERBOSE | re.DOTALL)


class JsoncError(ValueError):
    """The text is not JSON (with comments and trailing commas)."""


@dataclass(eq=False)
class Node:
    kind: str  # object | array | string | number | literal
    start: int
    end: int
    value: Any = None  # a scalar's value
    members: list[tuple[str, "Node", "Node"]] = field(default_factory=list)  # object: (key, key node, value)
    items: list["Node"] = field(default_factory=list)  # array

    def get(self, key: str) -> "Node | None":
        """An object's member (the last of a repeated name, as JSON readers take it)."""
        found = None
        for name, _, value in self.members:
            if name == key:
                found = value
        return found

    def plain(self) -> Any:
        """The value as json.loads would give it."""
        if self.kind == "object":
            return {k: v.plain() for k, _, v in self.members}
        if self.kind == "array":
            return [v.plain() for v in self.items]
        return self.value


def _tokens(text: str):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise JsoncError(f"not JSON at line {line}: {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup not in ("ws", "comment"):
            yield m.lastgroup, m.group(), m.start(), m.end()
    while True:  # a truncated document asks past its end: it gets the end again, and the parser says so
        yield "end", "", len(text), len(text)


def _string(text: str, tok: str, start: int) -> str:
    """A string token's value: escapes as JSON has them (a lone surrogate kept as it is), raw
    control characters such as a tab accepted as VS Code's reader does; any other escape is an error."""
    try:
        return json.loads(tok, strict=False)
    except ValueError:
        line = text.count("\n", 0, start) + 1
        raise JsoncError(f"not JSON at line {line}: a string with an escape JSON does not have: {tok[:40]!r}") from None


def _number(tok: str) -> Any:
    """A number token's value: int or float as json.loads gives it; a number past Python's digit
    limit for int (4300 digits) as a Decimal, exactly as written."""
    try:
        return json.loads(tok)
    except ValueError:
        return Decimal(tok)


def parse(text: str) -> Node:
    tokens = _tokens(text)
    current = [next(tokens)]

    def take():
        tok = current[0]
        current[0] = next(tokens)
        return tok

    def fail(tok, what: str):
        line = text.count("\n", 0, tok[2]) + 1
        return JsoncError(f"not JSON at line {line}: {what}, found {tok[1] or 'the end'!r}")

    def value(depth: int) -> Node:
        if depth > 200:
            raise JsoncError("nested too deep")
        kind, tok, start, end = take()
        if kind == "string":
            return Node("string", start, end, _string(text, tok, start))
        if kind == "number":
            return Node("number", start, end, _number(tok))
        if kind == "literal":
            return Node("literal", start, end, json.loads(tok))
        if tok == "{":
            node = Node("object", start, end)
            while current[0][1] != "}":
                key = take()
                if key[0] != "string":
                    raise fail(key, "a member name")
                if take()[1] != ":":
                    raise fail(current[0], "':'")
                name = _string(text, key[1], key[2])
                node.members.append((name, Node("string", key[2], key[3], name), value(depth + 1)))
                if current[0][1] == ",":
                    take()
                elif current[0][1] != "}":
                    raise fail(current[0], "',' or '}'")
            node.end = take()[3]
            return node
        if tok == "[":
            node = Node("array", start, end)
            while current[0][1] != "]":
                node.items.append(value(depth + 1))
                if current[0][1] == ",":
                    take()
                elif current[0][1] != "]":
                    raise fail(current[0], "',' or ']'")
            node.end = take()[3]
            return node
        raise fail((kind, tok, start, end), "a value")

    if current[0][0] == "end":
        raise JsoncError("empty: no JSON value in it")
    root = value(0)
    if current[0][0] != "end":
        raise fail(current[0], "the end of the document")
    return root


def edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, end, replacement in sorted(edits):
        if start < last:
            raise ValueError("overlapping edits")
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out)


def indent_before(text: str, at: int) -> str:
    """The white space from the start of `at`'s line to `at` ('' when something else is there)."""
    line_start = text.rfind("\n", 0, at) + 1
    lead = text[line_start:at]
    return lead if not lead.strip() else ""


def next_token(text: str, at: int) -> tuple[str, str, int] | None:
    """The first token from `at` on, past white space and comments: (kind, text, start); None at
    the end of the text or where no token is."""
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            return None
        if m.lastgroup not in ("ws", "comment"):
            return m.lastgroup, m.group(), m.start()
        at = m.end()
    return None
