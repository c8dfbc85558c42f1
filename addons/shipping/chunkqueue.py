"""The chunks that passed the wire and wait for the recorder, in the order they passed.

A capture must never make the wire wait for its database. Chunks are held in memory up to
MEMORY_LIMIT_BYTES; beyond that they go, in order, to an overflow file (unlinked at creation:
it disappears with the process) beside the database or in the temp folder, and the recorder
reads them back from there. Memory stays bounded, the wire runs at its own speed, and the
database catches up when the flood is over. Only when no overflow file can be written do the
producers wait for the recorder to make room in memory (the pipe's own back-pressure)."""

from __future__ import annotations

import os
import struct
import threading
from collections import deque
from collections.abc import Sequence

from mcptap.addons.shipping.chunkwire import HEADER, KINDS, chunk_header

MEMORY_LIMIT_BYTES = 8 << 20
"""Chunk bytes held in memory before further chunks go to the overflow file."""

WAKE_BYTES = 1 << 20
"""Chunk bytes in memory at which a consumer in `wait()` is woken before its interval is up."""

Chunk = tuple[str, float, bytes]  # (stream, arrival time, bytes)


def _pwrite(fd: int, head: bytes, body: bytes, offset: int) -> int:
    """Write head and body at offset in one call (pwritev where the platform has it, e.g. not
    macOS, else one joined buffer)."""
    if _HAS_PWRITEV:
        return os.pwritev(fd, (head, body), offset)
    return os.pwrite(fd, head + body, offset)


_HAS_PWRITEV = hasattr(os, "pwritev")


class ChunkQueue:
    """One producer per stream `put()`s, one consumer `take()`s, first in, first out."""

    def __init__(self, overflow_folders: Sequence[str | None], memory_limit: int = MEMORY_LIMIT_BYTES):
        self._folders = tuple(overflow_folders)
        self._limit = memory_limit
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiters = 0
        self._plenty = threading.Event()
        self._memory: deque[Chunk] = deque()
        self._put_bytes = dict.fromkeys(KINDS, 0)  # each key written by one producer only
        self._taken_bytes = 0  # written by the consumer only
        self._file = None  # the overflow file, created at the first overflow
        self._overflow_broken = False
        self._spilling = False  # chunks go to the file until the consumer has read all of it
        self._written = 0  # end of the last whole record in the file
        self._read = 0
        self.overflowed = 0
        """Chunk bytes that went through the overflow file (a figure for tests and benchmarks)."""
        self.unreadable = 0
        """Chunk bytes the overflow file could not give back (an I/O error reading it)."""

    # -- producers -------------------------------------------------------------------------

    def put(self, stream: str, ts: float, chunk: bytes) -> None:
        """Queue a chunk; returns at once unless memory is full and no overflow file works.
        One producer per stream. The common case takes no lock: deque.append is atomic, and a
        chunk that races with the switch to the overflow file was read off the wire before the
        switch, so it cannot be the effect of anything the file holds."""
        size = len(chunk)
        if not self._spilling and (held := self._memory_bytes() + size) <= self._limit:
            self._memory.append((stream, ts, chunk))
            self._put_bytes[stream] += size
            if held >= WAKE_BYTES and not self._plenty.is_set():
                self._plenty.set()
            return
        self._plenty.set()
        with self._lock:
            if not self._spilling and (self._memory_bytes() + size <= self._limit or not self._memory):
                self._memory.append((stream, ts, chunk))
                self._put_bytes[stream] += size
                return
            if self._spill(stream, ts, chunk):
                return
            self._waiters += 1
            while self._spilling or (self._memory and self._memory_bytes() + size > self._limit):
                self._room.wait()
            self._waiters -= 1
            self._memory.append((stream, ts, chunk))
            self._put_bytes[stream] += size

    def _memory_bytes(self) -> int:
        return sum(self._put_bytes.values()) - self._taken_bytes

    def _spill(self, stream: str, ts: float, chunk: bytes) -> bool:
        """Append to the overflow file (lock held); False when there is none to be had."""
        if self._overflow_broken:
            return False
        if self._file is None:
            self._file = self._open()
            if self._file is None:
                self._overflow_broken = True
                return False
        record = chunk_header(stream, ts, len(chunk))
        try:
            written = _pwrite(self._file.fileno(), record, chunk, self._written)
        except OSError:
            written = -1
        if written != len(record) + len(chunk):  # disk full: what was written whole still counts
            self._overflow_broken = True
            return False
        self._written += written
        self._spilling = True
        self.overflowed += len(chunk)
        return True

    def _open(self):
        import tempfile  # at the first overflow, not at start-up (a host spawns every server through the tee)

        for folder in self._folders:  # None: the system's temporary folder
            try:
                return tempfile.TemporaryFile(dir=folder, prefix=".mcptap-overflow-")
            except OSError:
                continue
        return None

    # -- the consumer ----------------------------------------------------------------------

    def wait(self, timeout: float) -> None:
        """Sleep `timeout` seconds, or less when WAKE_BYTES or more are waiting (a flood): the
        consumer is woken per batch, never per chunk."""
        self._plenty.wait(timeout)
        self._plenty.clear()

    def wake(self) -> None:
        """End a consumer's `wait()` now."""
        self._plenty.set()

    def take(self, max_bytes: int) -> list[Chunk]:
        """The oldest chunks, about `max_bytes` of them (at least one if any is queued)."""
        taken: list[Chunk] = []
        nbytes = 0
        with self._lock:
            memory = self._memory
            while memory and nbytes < max_bytes:
                item = memory.popleft()
                taken.append(item)
                nbytes += len(item[2])
            self._taken_bytes += nbytes
            if taken or not self._spilling:
                if self._waiters:
                    self._room.notify_all()
                return taken
            start, end = self._read, self._written
        taken, offset = self._read_file(start, end, max_bytes)  # written records never change
        with self._lock:
            self._read = offset
            if self._read == self._written:  # caught up: back to memory, give the disk back
                self._spilling = False
                self._read = self._written = 0
                try:
                    os.ftruncate(self._file.fileno(), 0)
                except OSError:
                    pass
                if self._waiters:
                    self._room.notify_all()
        return taken

    def _read_file(self, offset: int, end: int, max_bytes: int) -> tuple[list[Chunk], int]:
        taken: list[Chunk] = []
        nbytes = 0
        fd = self._file.fileno()
        try:
            while offset < end and nbytes < max_bytes:
                index, ts, size = HEADER.unpack(os.pread(fd, HEADER.size, offset))
                chunk = os.pread(fd, size, offset + HEADER.size)
                if len(chunk) != size:
                    raise OSError("short read")
                taken.append((KINDS[index], ts, chunk))
                nbytes += size
                offset += HEADER.size + size
        except (OSError, struct.error):  # the disk failed us: say how much, never hang on it
            self.unreadable += end - offset
            offset = end
        return taken, offset

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
