"""Text from the traffic made safe to print, the one place it is done for each medium: a method
name, an id, a label, a revision, a stderr line, a header, a finding's message or a frame shown on
a terminal (`printable`, which every text face calls: the transcript, the follow, the tables, the
diffs, errors and warnings) must not carry control characters (C0 and C1, ESC: an escape sequence
in a recorded frame would set the window title, clear the screen or write the clipboard) or
invisible ones (a bidi override such as U+202E, an isolate U+2066-U+2069, a mark U+200E/U+200F or
any other format character would reorder or hide what is shown). Each such character is written
as its escape (`\\x1b`, `\\u202e`). JSON and SARIF keep the value and write each such character
as a JSON escape (`json_text`); the HTML report writes `printable` text escaped for HTML
(analyzer/report/html.py). Text from the traffic that a page or the viewer's API shows (a stderr
line, a frame's bytes) is first bounded by `shown`: a cut of at most so many characters that says
how long the whole was."""

from __future__ import annotations


def storable(text: str) -> str:
    """Text SQLite (and UTF-8 output) can take: a lone surrogate, legal in a JSON escape, is
    written escaped."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def shown(raw: bytes | str | None, limit: int, size: int | None = None) -> str | None:
    """The text of `raw` (bytes as UTF-8, a byte that is not as its `\\x` escape) as a page shows
    it: at most `limit` characters, then, when `raw` (or the whole it was cut from, of `size`
    bytes) is longer, a mark saying how long the whole is. None stays None."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, (bytes, bytearray, memoryview)) else str(raw)
    whole = max(size or 0, len(raw) if isinstance(raw, (bytes, bytearray)) else len(text.encode("utf-8", "surrogatepass")))
    if len(text) <= limit and whole <= len(text.encode("utf-8", "surrogatepass")):
        return text
    return f"{text[:limit]}… [cut: {whole:,} bytes in all]"


def storable_tree(value):
    """A parsed JSON value with every text in it, keys too, `storable` (walked without recursion,
    so any depth the parser took is fine)."""
    if isinstance(value, str):
        return storable(value)
    if not isinstance(value, (dict, list)):
        return value
    top = type(value)()
    work = [(value, top)]
    while work:
        source, target = work.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            if isinstance(item, (dict, list)):
                copy = type(item)()
                work.append((item, copy))
            else:
                copy = storable(item) if isinstance(item, str) else item
            if isinstance(target, dict):
                target[storable(key)] = copy
            else:
                target.append(copy)
    return top


def printable(text: str) -> str:
    """`text` with every character that is not printable (Unicode's categories Cc, Cf, Cs, Co,
    Cn, Zl, Zp: controls, format characters such as the bidi controls, line separators,
    unassigned) written as its escape; printable text is returned as it is."""
    return _escaped(text, _escape)


def printing(write):
    """`write` (a callable taking one line) that escapes what it is given (`printable`): for the
    faces that write text line by line. Escaped text is left as it is, so a line whose fields were
    escaped already comes out the same."""

    def escaped(line: str) -> None:
        write(printable(line))

    return escaped


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def json_text(text: str, *, indented: bool = False) -> str:
    """Compact JSON text (no raw newline between tokens) with every character that is not
    printable written as a JSON escape (`\\u202e`; a pair of surrogate escapes past U+FFFF): the
    same JSON value, safe to show on a terminal. Outside strings compact JSON has only printable
    characters, so only string contents change. `indented`: JSON text with newlines between its
    tokens (`json.dumps(indent=...)`, which writes a newline inside a string as its escape): those
    are kept."""
    if indented:
        return "\n".join(_escaped(line, _json_escape) for line in text.split("\n"))
    return _escaped(text, _json_escape)


def _escaped(text: str, escape) -> str:
    """`text` with each character that is not printable written by `escape`."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else escape(ch) for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
