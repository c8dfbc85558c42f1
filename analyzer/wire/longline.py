"""A frame-log line longer than a frame may be stored (`--max-frame`) read as it streams: the
members before its `raw` parsed, `raw`'s JSON string decoded a piece at a time with only the
first `keep` bytes of the frame kept and the rest counted, then the members after it; the record
given with its frame cut and `meta.truncated` its full size, so that the importer stores it cut
and marked as any frame over the limit. Memory holds `keep` bytes and a piece, never the line."""

from __future__ import annotations

import json
from collections.abc import Callable

ROOM = 1 << 16
"""Bytes the members before and after `raw` may take."""

_BACKSLASH, _QUOTE = 0x5C, 0x22


def read_record(data: bytes, more: Callable[[], bytes], keep: int) -> tuple[dict, bytes, int, bool] | None:
    """(the record, what follows the line's newline, the line's length with its newline, whether
    a newline ended it) of a line beginning `data` whose rest `more()` gives a chunk at a time
    (b"" at the end); None, with nothing more read, when the line is no frame record with a
    `raw` string among its first ROOM bytes. Raises ValueError for a line that is not JSON."""
    text = data[:ROOM].decode("utf-8", "ignore")
    decoder = json.JSONDecoder()
    before: dict = {}
    pos = _skip(text, 0)
    if not text.startswith("{", pos):
        return None
    pos += 1
    while True:
        pos = _skip(text, pos)
        try:
            key, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        pos = _skip(text, pos)
        if not isinstance(key, str) or not text.startswith(":", pos):
            return None
        pos = _skip(text, pos + 1)
        if key == "raw" and text.startswith('"', pos):
            break
        try:
            before[key], pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return None
        pos = _skip(text, pos)
        if not text.startswith(",", pos):
            return None
        pos += 1
    start = len(text[:pos + 1].encode("utf-8"))
    kept, total, buf, used, ended = bytearray(), 0, data[start:], start, False
    carry = ""
    while True:
        end = _closing_quote(buf)
        if end is None:
            chunk = more()
            if not chunk:
                raise ValueError("the line ends inside its 'raw' string")
            safe = _safe_split(buf)
            piece, buf = buf[:safe], buf[safe:] + chunk
        else:
            piece, buf = buf[:end], buf[end + 1:]
        used += len(piece)
        decoded = json.loads(b'"' + piece + b'"')
        if carry:  # the pair's halves joined into one character (a lone half stays as it is)
            pair = (carry + decoded[:1]).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            decoded, carry = pair + decoded[1:], ""
        if end is None and decoded and "\ud800" <= decoded[-1] <= "\udbff":
            decoded, carry = decoded[:-1], decoded[-1]  # the first half of a pair split by the piece
        raw = decoded.encode("utf-8", "surrogatepass")
        total += len(raw)
        if len(kept) < keep:
            kept += raw[: keep - len(kept)]
        if end is not None:
            used += 1
            break
    rest = bytearray()
    while True:
        newline = buf.find(b"\n")
        if newline >= 0:
            rest += buf[:newline]
            buf, ended = buf[newline + 1:], True
            break
        rest += buf
        if len(rest) > ROOM:
            raise ValueError("too long after its 'raw' string")
        buf = more()
        if not buf:
            break
    used += len(rest) + ended
    after = json.loads(b'{"raw":0' + bytes(rest))
    if not isinstance(after, dict):
        raise ValueError("not a JSON object")
    del after["raw"]
    record = {**before, **after}
    del kept[_char_boundary(kept, keep) if total > keep else len(kept):]
    record["raw"] = kept.decode("utf-8", "surrogatepass")
    del kept
    if total > keep:
        meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
        record["meta"] = {**meta, "truncated": max(total, int(meta.get("truncated") or 0))}
    return record, bytes(buf), used, ended


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _closing_quote(buf: bytes) -> int | None:
    """Where the string whose contents `buf` begins ends: its closing quote (one not escaped)."""
    at = buf.find(b'"')
    while at >= 0:
        run = 0
        while at - run - 1 >= 0 and buf[at - run - 1] == _BACKSLASH:
            run += 1
        if run % 2 == 0:
            return at
        at = buf.find(b'"', at + 1)
    return None


def _safe_split(buf: bytes) -> int:
    """A length of `buf` that ends neither inside an escape nor inside a UTF-8 character."""
    safe = len(buf)
    slash = buf.rfind(b"\\", max(0, safe - 12))
    if slash >= 0:
        while slash > 0 and buf[slash - 1] == _BACKSLASH:
            slash -= 1
        safe = slash
    while safe > 0 and safe < len(buf) and buf[safe] & 0xC0 == 0x80:
        safe -= 1
    return safe


def _char_boundary(data: bytearray, at: int) -> int:
    """`at`, moved back to where a UTF-8 character begins."""
    at = min(at, len(data))
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at -= 1
    return at
