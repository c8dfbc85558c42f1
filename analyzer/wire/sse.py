"""Server-sent events, parsed incrementally as the chunks of a stream pass (the WHATWG HTML
"event stream interpretation"), on bytes: a frame is stored exactly as the event's data said it.

Chunk boundaries fall anywhere (an event split across chunks, several in one, CRLF split between
two), so the parser keeps what it has not finished. Lines end in CRLF, LF or CR. A line starting
with ":" is a comment. `data` lines join with LF. An event is dispatched at a blank line; one
without any `data` line dispatches nothing but its `id` still sets the last event id, which is
what `Event.data is None` reports. A `data:` with nothing after it is an empty-data event (the
2025-11-25 priming event), reported with `data == b""`.

Bounded and linear: each byte is scanned once (a line that never ends costs no rescans), only
the unfinished line and event are kept, and with a `limit` no more than that many bytes of an
event's data are kept: beyond it the data is counted (`Event.full_size`), not kept."""

from __future__ import annotations

from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Event:
    type: str  # the `event` field, "message" when absent
    data: bytes | None  # None: the event had no data line (nothing is dispatched)
    id: str | None  # the last event id once this event is dispatched
    has_id: bool  # this event carried an `id` field itself
    retry: int | None  # a valid `retry` field in this event, in ms
    full_size: int | None = None  # the data's full size when it was cut at the limit (None: whole)


LINE_SLACK = 16
"""Bytes of a line kept beyond the limit (room for its field name): a line longer than the
limit and this is kept no further, so what follows it may be given as a count (`skip`)."""


def _copy(data, start: int, end: int) -> bytes:
    """data[start:end] as bytes, copied once (a slice of a bytearray would be copied twice)."""
    if start == 0 and end == len(data) and data.__class__ is bytes:
        return data
    with memoryview(data) as view:
        return bytes(view[start:end])


class SSEParser:
    """Feed bytes with `feed()`, get the events they complete; `finish()` at the end of the
    stream gives what a stream cut short leaves (an unterminated event is not dispatched, as
    in a browser; it is returned in `incomplete` for the record). `limit`: the most bytes of
    one event's data kept (None: all)."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit if limit is not None else 1 << 62
        self._buf = bytearray()  # the unfinished line (at most limit + LINE_SLACK bytes of it)
        self._buf_size = 0  # its full length
        self._skip_lf = False  # the last chunk ended in CR: an LF first in the next ends nothing
        self._start = True  # a UTF-8 BOM may open the stream
        self._data: list[bytes] | None = None
        self._data_kept = 0  # bytes of data kept (LFs joining the lines counted)
        self._data_size = 0  # bytes of data the event has in all
        self._type = b""
        self._id: bytes | None = None  # id field seen in the event being built
        self._retry: int | None = None
        self._lines = 0  # lines of the event being built
        self.last_id: str | None = None
        self.scanned = 0
        """Bytes looked at for line ends, in all (each byte once: the work is linear)."""

    def feed(self, chunk: bytes) -> list[Event]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._start:
            chunk = bytes(self._buf) + chunk
            self._buf.clear()
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._buf += chunk
                return []
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
            self._start = False
        events: list[Event] = []
        end = len(chunk)
        self.scanned += end
        pos = 0
        lf = chunk.find(b"\n")
        cr = chunk.find(b"\r")
        while True:  # each find starts where the last line ended and stops at the next end: linear
            if 0 <= lf < pos:
                lf = chunk.find(b"\n", pos)
            if 0 <= cr < pos:
                cr = chunk.find(b"\r", pos)
            if cr >= 0 and (lf < 0 or cr < lf):
                eol = nxt = cr
                nxt += 1
                if nxt < end:
                    if chunk[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._skip_lf = True
            elif lf >= 0:
                eol, nxt = lf, lf + 1
            else:
                break
            if self._buf_size:
                self._keep(chunk, pos, eol)
                buf = self._buf
                event = self._line(buf, 0, len(buf), self._buf_size)
                buf.clear()
                self._buf_size = 0
            else:
                event = self._line(chunk, pos, min(eol, pos + self._limit + LINE_SLACK), eol - pos)
            if event is not None:
                events.append(event)
            pos = nxt
        if pos < end:
            self._keep(chunk, pos, end)
        return events

    def skip(self, count: int) -> None:
        """`count` bytes that continue the unfinished line and hold no CR or LF, given by their
        count alone, once the line is longer than the limit and LINE_SLACK (none would be kept)."""
        if count > 0:
            self._skip_lf = False
            self._buf_size += count

    def _keep(self, chunk: bytes, start: int, end: int) -> None:
        """Add chunk[start:end] to the unfinished line, up to the limit."""
        room = self._limit + LINE_SLACK - len(self._buf)
        if room > 0:
            self._buf += chunk[start:min(end, start + room)]
        self._buf_size += end - start

    @property
    def incomplete(self) -> bytes:
        """The data a stream ending now would leave undispatched: the data lines of an event
        with no blank line after it yet, and an unfinished last `data` line (cut at the limit;
        `incomplete_size` is its full size)."""
        return self._unfinished()[0]

    @property
    def incomplete_size(self) -> int:
        """The full size of `incomplete`."""
        return self._unfinished()[1]

    def _unfinished(self) -> tuple[bytes, int]:
        data = list(self._data or ())
        size = self._data_size
        buf = self._buf
        name, start = self._field(buf, 0, len(buf))
        if name == b"data":
            join = 1 if self._data is not None else 0
            size += join + self._buf_size - start
            room = self._limit - self._data_kept - join
            if room >= 0:
                data.append(_copy(buf, start, min(len(buf), start + room)))
        return b"\n".join(data), size

    @staticmethod
    def _field(line, pos: int, end: int) -> tuple[bytes, int]:
        """A line's field name (b"" for one no field has: longer than any) and where its value
        starts (after the colon and one space)."""
        colon = line.find(b":", pos, min(end, pos + 8))
        if colon < 0:
            return (bytes(line[pos:end]) if end - pos <= 8 else b""), end
        start = colon + 1
        if start < end and line[start] == 0x20:
            start += 1
        return bytes(line[pos:colon]), start

    def _line(self, line, pos: int, end: int, size: int) -> Event | None:
        """The line line[pos:end] (bytes or the bytearray of an unfinished line; `size` its
        full length, more than end - pos when it was cut at the limit)."""
        if pos == end:
            return self._dispatch()
        if line[pos] == 0x3A:  # ":", a comment
            return None
        self._lines += 1
        name, start = self._field(line, pos, end)
        if name == b"data":
            full = size - (start - pos)
            join = 0 if self._data is None else 1  # the LF joining it to the line before
            if self._data is None:
                self._data = []
            self._data_size += join + full
            room = self._limit - self._data_kept - join
            if room >= 0:
                piece = _copy(line, start, min(end, start + room))
                self._data.append(piece)
                self._data_kept += join + len(piece)
            return None
        value = bytes(line[start:end])
        if name == b"event":
            self._type = value
        elif name == b"id":
            if b"\0" not in value:
                self._id = value
        elif name == b"retry":
            if value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._lines:
            return None
        has_id = self._id is not None
        if has_id:
            self.last_id = self._id.decode("utf-8", "replace")
        data = b"\n".join(self._data) if self._data is not None else None
        cut = self._data_size if self._data_size > self._data_kept else None
        event = Event(self._type.decode("utf-8", "replace") or "message", data, self.last_id, has_id, self._retry, cut)
        self._data, self._type, self._id, self._retry, self._lines = None, b"", None, None, 0
        self._data_kept = self._data_size = 0
        return event
