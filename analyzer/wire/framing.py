"""Newline framing of a byte stream, as MCP's stdio transport defines it: a message is a line
without its terminating `\\n` (a `\\r` before it is kept, it is part of what was sent). A line
longer than the limit is kept cut at the limit (analyzer/wire/bounded.py), its full length counted."""

from __future__ import annotations


class LineFramer:
    """Cuts lines out of chunks that split anywhere; keeps the unterminated tail between calls,
    at most `limit` bytes of it. After `feed()`, `cut` maps the index of each line it returned
    cut to that line's full length (None: none was cut)."""

    __slots__ = ("_tail", "_kept", "_size", "_limit", "cut")

    def __init__(self, limit: int | None = None) -> None:
        self._tail: list[bytes] = []
        self._kept = 0  # bytes in _tail
        self._size = 0  # the tail's full length
        self._limit = limit if limit is not None else 1 << 62
        self.cut: dict[int, int] | None = None

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that this chunk completes, in order."""
        self.cut = None
        if b"\n" not in chunk:
            if chunk:
                self._add(chunk)
            return []
        lines = chunk.split(b"\n")
        last = lines.pop()
        if self._size:
            self._add(lines[0])
            lines[0] = b"".join(self._tail)
            if self._size > self._kept:
                self.cut = {0: self._size}
            self._tail, self._kept, self._size = [], 0, 0
        if len(chunk) > self._limit:  # a line in the chunk itself may be too long
            limit = self._limit
            for i, line in enumerate(lines):
                if len(line) > limit:
                    if self.cut is None:
                        self.cut = {}
                    self.cut[i] = self.cut.get(i, len(line))
                    lines[i] = line[:limit]
        if last:
            self._add(last)
        return lines

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        room = self._limit - self._kept
        if room > 0:
            if len(piece) > room:
                piece = piece[:room]
            self._tail.append(piece)
            self._kept += len(piece)

    def finish(self) -> bytes | None:
        """The bytes after the last newline when the stream ended (an incomplete line), if any
        (cut at the limit: `size` before this call is its full length)."""
        if not self._size:
            return None
        tail = b"".join(self._tail)
        self._tail, self._kept, self._size = [], 0, 0
        return tail

    @property
    def pending(self) -> int:
        return self._kept

    @property
    def size(self) -> int:
        """The full length of the unterminated tail."""
        return self._size
