"""Characters a reader does not see in a definition's names and descriptions: controls, format
characters (zero-width, bidi overrides and isolates, Unicode tag characters), private-use and
unassigned code points, variation selectors of the supplement, and words that mix Latin letters
with Cyrillic or Greek lookalikes. Each is given with its JSON path and position, escaped."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, NamedTuple

from mcptap.wire.jsonpath import format_path

ALLOWED = frozenset("\n\r\t")
"""Controls a description may hold: line breaks and tabs."""
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
_SUSPECT_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_SHOWN = 6
"""Hidden characters a finding names, at most."""


class Hidden(NamedTuple):
    """One hidden character (or a lookalike word): where (a JSON path in the definition, and the
    index in that string; `key`: in a member's name), and what, escaped."""
    path: str
    at: int
    what: str


def escaped(ch: str) -> str:
    """A character as `U+XXXX NAME` (its name when Unicode gives one)."""
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def escape_text(text: str) -> str:
    """`text` with every character outside printable ASCII written as `\\uXXXX` (or `\\U00XXXXXX`)."""
    return "".join(ch if " " <= ch <= "~" else (f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
                   for ch in text)


def _suspect(ch: str) -> bool:
    if ch in ALLOWED:
        return False
    code = ord(ch)
    if 0xE0100 <= code <= 0xE01EF:  # variation selectors supplement: invisible, carry bytes
        return True
    return unicodedata.category(ch) in _SUSPECT_CATEGORIES


def _emoji_joiner(text: str, i: int) -> bool:
    """A zero-width joiner inside an emoji sequence (between two symbols, a variation selector or
    a skin-tone modifier before it): how emoji are written, not hidden text."""
    if text[i] != "\u200d" or i == 0 or i + 1 >= len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    return (unicodedata.category(before) in ("So", "Sk") or before == "\ufe0f") and unicodedata.category(after) == "So"


def _script(ch: str) -> str | None:
    name = unicodedata.name(ch, "")
    for script in _SCRIPTS:
        if name.startswith(script):
            return script
    return None


def in_text(text: str) -> list[tuple[int, str]]:
    """(index, what) of each hidden character and mixed-script word of `text`."""
    out: list[tuple[int, str]] = []
    if text.isascii():
        for i, ch in enumerate(text):
            if ch < " " and ch not in ALLOWED or ch == "\x7f":
                out.append((i, escaped(ch)))
        return out
    word_start, scripts = 0, set()
    for i, ch in enumerate(text + " "):
        if _suspect(ch) and i < len(text) and not _emoji_joiner(text, i):
            out.append((i, escaped(ch)))
        if ch.isalpha():
            if not scripts:
                word_start = i
            script = _script(ch)
            scripts.add(script)
            continue
        if "LATIN" in scripts and scripts & {"CYRILLIC", "GREEK"}:
            out.append((word_start, f"the word \"{escape_text(text[word_start:i])}\" mixes "
                                    f"{' and '.join(sorted(s for s in scripts if s))} letters"))
        scripts = set()
    return out


def hidden(definition: Any) -> list[Hidden]:
    """Every hidden character and mixed-script word in a definition's strings and member names,
    walked without recursion."""
    out: list[Hidden] = []
    stack: list[tuple[Any, tuple]] = [(definition, ())]
    while stack:
        value, at = stack.pop()
        if type(value) is str:
            out.extend(Hidden(format_path(at), i, what) for i, what in in_text(value))
        elif type(value) is dict:
            for key, member in value.items():
                if type(key) is str:
                    out.extend(Hidden(format_path(at) + f" (member name {escape_text(key)!r})", i, what)
                               for i, what in in_text(key))
                stack.append((member, (*at, key)))
        elif type(value) is list:
            stack.extend((member, (*at, i)) for i, member in enumerate(value))
    out.sort()
    return out


def safe(text: str) -> str:
    """`text` with every hidden character written as its escape (`\\u200b`): what a finding's
    message may hold of a definition or an argument (controls, format characters, private-use
    code points and surrogates; unassigned ones are escaped where the faces print)."""
    if text.isascii():
        if _ASCII_CONTROL.search(text) is None:
            return text
    elif _HIDDEN.search(text) is None:
        return text
    return _HIDDEN.sub(_escape, text)


_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\uf8ff\U000e0000-\U000e0fff\U000f0000-\U0010ffff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
