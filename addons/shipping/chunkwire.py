"""Chunks as records on a byte stream: the tee's overflow file and its pipe to the recorder
process (addons/stdio/recorder.py). A record is a header (kind, time, length) followed by that
many bytes. Kinds 0, 1, 2 are the streams a chunk passed on (STREAMS), 3 and 4 the HTTP capture's
batches (KINDS); SESSION and END carry a
JSON object (the session row; its end time and exit status)."""

from __future__ import annotations

import json
import os
import struct
from collections import namedtuple
from collections.abc import Callable, Iterator

STREAMS = ("c2s", "s2c", "stderr")
KINDS = STREAMS + ("ops", "meta")
"""Record kinds that carry bytes: the stdio streams, and the HTTP capture's marshalled batches
(`ops` for its recorder process, `meta` for the proxy's own bookkeeping; addons/http/recorder.py)."""
STREAM_INDEX = {kind: i for i, kind in enumerate(KINDS)}
SESSION, END = 254, 255

HEADER = struct.Struct("<BdI")  # kind, Unix time, payload length (little-endian, no padding)


Record = namedtuple("Record", ("kind", "ts", "payload"))  # not typing's NamedTuple: the tee starts without typing
Record.__doc__ = """One record as read: its kind (an index of KINDS, or SESSION, END: int), its time (float), its
bytes (bytes or bytearray)."""

READ_SIZE = 1 << 20

LARGE = 4 << 20
"""A record longer than this is read into a buffer of its own and given as that bytearray (one
copy of a large frame in the reader, not three)."""


def chunk_header(stream: str, ts: float, size: int) -> bytes:
    return HEADER.pack(STREAM_INDEX[stream], ts, size)


def json_record(kind: int, value: dict) -> bytes:
    payload = json.dumps(value).encode()
    return HEADER.pack(kind, 0.0, len(payload)) + payload


class RecordReader:
    """Iterates a Record for each whole record on `fd` until EOF; a torn last
    record (the writer died mid-way) is dropped. `before_read()`, when set, is called before
    each read from `fd` (the reader's pacing); it may be set while iterating."""

    def __init__(self, fd: int):
        self.fd = fd
        self.before_read: Callable[[], None] | None = None

    def __iter__(self) -> Iterator[Record]:
        buf = bytearray()
        start = 0
        while True:
            if self.before_read is not None:
                self.before_read()
            data = os.read(self.fd, READ_SIZE)
            if not data:
                return
            buf += data
            end = len(buf)
            while end - start >= HEADER.size:
                kind, ts, size = HEADER.unpack_from(buf, start)
                stop = start + HEADER.size + size
                if stop > end and size > LARGE:
                    held = [self._large(buf, start + HEADER.size, size)]
                    if held[0] is None:
                        return  # torn: the writer died mid-way
                    del buf[:]
                    start = end = 0
                    yield Record(kind, ts, held.pop())  # the consumer's alone: it may free a large one before the next
                    continue
                if stop > end:
                    break
                with memoryview(buf) as view:  # one copy of a record, not two (a frame may be large)
                    held = [bytes(view[start + HEADER.size:stop])]
                yield Record(kind, ts, held.pop())
                start = stop
            if start:
                del buf[:start]
                start = 0

    def _large(self, buf: bytearray, at: int, size: int) -> bytearray | None:
        """A large record's payload: what `buf` holds of it from `at`, and the rest read into
        place; None if EOF comes first."""
        record = bytearray(size)
        have = len(buf) - at
        record[:have] = memoryview(buf)[at:]
        del buf[:]
        with memoryview(record) as view:
            while have < size:
                got = os.readv(self.fd, [view[have:]])
                if not got:
                    return None
                have += got
        return record
