"""Text from the traffic made safe to print: a method name, an id, a finding's message or a frame
shown on a terminal must not carry control characters (an escape sequence in a recorded frame
would drive the reader's terminal) or invisible ones (a bidi override would reorder what is
shown). Each such character is written as its escape (`\\x1b`, `\\u202e`)."""

from __future__ import annotations


def storable(text: str) -> str:
    """Text SQLite (and UTF-8 output) can take: a lone surrogate, legal in a JSON escape, is
    written escaped."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
