"""Credential members written `"name": value` in text that is not JSON (a log line, a frame cut
short), also inside a quoted string whose quotes are escaped (`\\"name\\": \\"value\\"`, at any
depth of escaping): found in one pass, in time linear in the text whatever runs of backslashes it
holds."""

from __future__ import annotations

import re
from collections.abc import Iterator

_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*\Z|[-+0-9.eE]+', re.DOTALL)
"""A value after an unescaped name: a string (closed, or running to the end of a text cut short)
or a number."""
_NUMBER = re.compile(r"[-+0-9.eE]+")
_CLOSING = re.compile(r'(?<!\\)(\\+)"')
"""A whole run of backslashes before a quote (one place tried per run: linear)."""


class LooseMembers:
    """Finds the members whose name matches `key_regex` (any case) and whose value is a string or
    a number, written as JSON in text that need not be JSON. A name quoted by `Q"` (Q a run of
    backslashes: the member is inside a string) takes a value quoted by the same `Q"`: the value
    ends at the next `Q"` that is a whole run (its own backslashes not escaped ones), or at the
    end of the text."""

    def __init__(self, key_regex: str):
        self._member = re.compile(rf'"(?P<key>{key_regex})(?P<q>\\*)"[ \t\n\r]*:[ \t\n\r]*',
                                  re.IGNORECASE | re.ASCII | re.DOTALL)

    def find(self, text: str) -> Iterator[tuple[str, str | None, int, int]]:
        """(name, its quote's backslashes or None, start, end of the value) of each member, in
        order, never overlapping."""
        pos = 0
        while True:
            m = self._member.search(text, pos)
            if m is None:
                return
            q = m.group("q") or None
            at = m.start()
            if q is not None and (at - len(q) < pos or text[at - len(q):at] != q):
                pos = at + 1  # a name quoted `Q"` must be opened by `Q"` too
                continue
            end = self._value_end(text, m.end(), q)
            if end is None:
                pos = at + 1
                continue
            yield m.group("key"), q, m.end(), end
            pos = end

    @staticmethod
    def _value_end(text: str, at: int, q: str | None) -> int | None:
        if q is None:
            v = _VALUE.match(text, at)
            return v.end() if v is not None else None
        if text.startswith(q + '"', at):
            for closing in _CLOSING.finditer(text, at + len(q) + 1):
                if len(closing.group(1)) == len(q):
                    return closing.end()
            return len(text)  # not closed: the rest of the text
        v = _NUMBER.match(text, at)
        return v.end() if v is not None else None
