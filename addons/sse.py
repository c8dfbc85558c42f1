"""Server-sent events, parsed incrementally as the chunks of a stream pass (the WHATWG HTML
"event stream interpretation"), on bytes: a frame is stored exactly as the event's data said it.

Chunk boundaries fall anywhere (an event split across chunks, several in one, CRLF split between
two), so the parser keeps what it has not finished. Lines end in CRLF, LF or CR. A line starting
with ":" is a comment. `data` lines join with LF. An event is dispatched at a blank line; one
without any `data` line dispatches nothing but its `id` still sets the last event id, which is
what `Event.data is None` reports. A `data:` with nothing after it is an empty-data event (the
2025-11-25 priming event), reported with `data == b""`."""

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


class SSEParser:
    """Feed bytes with `feed()`, get the events they complete; `finish()` at the end of the
    stream gives what a stream cut short leaves (an unterminated event is not dispatched, as
    in a browser; it is returned in `incomplete` for the record)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._skip_lf = False  # the last chunk ended in CR: an LF first in the next ends nothing
        self._start = True  # a UTF-8 BOM may open the stream
        self._data: list[bytes] | None = None
        self._type = b""
        self._id: bytes | None = None  # id field seen in the event being built
        self._retry: int | None = None
        self._lines = 0  # lines of the event being built
        self.last_id: str | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        buf = self._buf
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf += chunk
        if self._start:
            if len(buf) < 3 and _BOM.startswith(bytes(buf)):
                return []
            if buf[:3] == _BOM:
                del buf[:3]
            self._start = False
        events: list[Event] = []
        pos, end = 0, len(buf)
        while pos < end:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else end)
            if cr >= 0:
                eol, nxt = cr, cr + 1
                if nxt < end:
                    if buf[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._skip_lf = True
            elif lf >= 0:
                eol, nxt = lf, lf + 1
            else:
                break
            event = self._line(bytes(buf[pos:eol]))
            if event is not None:
                events.append(event)
            pos = nxt
        del buf[:pos]
        return events

    @property
    def incomplete(self) -> bytes:
        """The data a stream ending now would leave undispatched: the data lines of an event
        with no blank line after it yet, and an unfinished last `data` line."""
        data = list(self._data or ())
        name, _, value = bytes(self._buf).partition(b":")
        if name == b"data":
            data.append(value[1:] if value[:1] == b" " else value)
        return b"\n".join(data)

    def _line(self, line: bytes) -> Event | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        self._lines += 1
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            if self._data is None:
                self._data = [value]
            else:
                self._data.append(value)
        elif name == b"event":
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
        event = Event(self._type.decode("utf-8", "replace") or "message", data, self.last_id, has_id, self._retry)
        self._data, self._type, self._id, self._retry, self._lines = None, b"", None, None, 0
        return event
