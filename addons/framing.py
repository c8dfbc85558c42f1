"""Newline framing of a byte stream, as MCP's stdio transport defines it: a message is a line
without its terminating `\\n` (a `\\r` before it is kept, it is part of what was sent)."""

from __future__ import annotations


class LineFramer:
    """Cuts lines out of chunks that split anywhere; keeps the unterminated tail between calls."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that this chunk completes, in order."""
        if b"\n" not in chunk:
            if chunk:
                self._tail.append(chunk)
            return []
        lines = chunk.split(b"\n")
        last = lines.pop()
        if self._tail:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
            self._tail = []
        if last:
            self._tail.append(last)
        return lines

    def finish(self) -> bytes | None:
        """The bytes after the last newline when the stream ended (an incomplete line), if any."""
        if not self._tail:
            return None
        tail = b"".join(self._tail)
        self._tail = []
        return tail

    @property
    def pending(self) -> int:
        return sum(len(p) for p in self._tail)
