"""How credential names and their values are written in frames and free text: a name as the
expression of its spellings (`name_regex`, a user's `glob`, `escapable` behind JSON \\u escapes),
the characters around it (quotes and white space, escaped or not; a JSON string's characters),
and a value's text as its own string says it (`unescaped`)."""

from __future__ import annotations

import json
import re

JSON_CHAR = re.compile(r'\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.|[^\\]',
                        re.DOTALL)
"""What json.loads reads as one character of a string: a surrogate pair's two escapes, one escape,
or one character."""
NO_SECRET = re.compile(rb"[ \t\n\r]*(?:[{\[]|(?:true|false|null)(?=[ \t\n\r,}\]:]|\Z))")
"""What may follow a credential's name and colon where its value is nothing to redact (as the
frame scanner reads it: an object or array, or one of the three literals)."""
ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
"""A JSON escape of a printable ASCII character: what a name hidden by escapes must contain."""
ANY_QUOTE = r'(?:\\*"|\\+u0022)'
ANY_SPACE = r"(?:[ \t\n\r]|\\+[nrt]|\\+u00(?:20|09|0a|0d))*"
"""A quote and white space as they may be written in a frame, or inside its strings (escaped)."""


def name_regex(name: str) -> str:
    """A credential name's expression (lower case): its words together or apart by `_`, `-`, `.`."""
    return r"(?:\-|_|\.)?".join(re.escape(word) for word in name.split("_"))


def glob(pattern: str, wildcard: str = '[^"\\\\]') -> str:
    """A member-name glob (`*`, `?`) as a regular expression whose wildcards never cross a quote
    (in free text: take only name characters)."""
    return "".join(wildcard + "*" if c == "*" else wildcard if c == "?" else re.escape(c) for c in pattern)


def unescaped(text: str, q: str) -> str:
    """A value's text written inside `len(q)` levels of quoted strings, as the value's own string
    says it (its text if it cannot be read: the hash then differs, the secret is still gone)."""
    levels = (len(q) + 1).bit_length() - 1
    for _ in range(levels + 1):
        try:
            text = json.loads(f'"{text}"')
        except ValueError:
            break
    return text


def escapable(regex: str) -> str:
    """A name's expression in which each plain letter, digit or underscore may also be written
    as a JSON \\u escape (behind more backslashes inside a string)."""
    out, i = [], 0
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex):
            out.append(_one(regex[i + 1]) if regex[i + 1] in "_-." else regex[i:i + 2])
            i += 2
            continue
        out.append(_one(c) if c.isalnum() or c == "_" else c)
        i += 1
    return "".join(out)


def _one(c: str) -> str:
    codes = {f"{ord(x):04x}" for x in {c.lower(), c.upper()}}
    return "(?:" + re.escape(c) + "".join(f"|\\\\+u{code}" for code in sorted(codes)) + ")"
