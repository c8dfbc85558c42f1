"""What an HTTP capture tells the store, op by op: the messages the tap queues on mitmproxy's event
loop (addons/http/tap.py, through a journal), its recorder process receives over a pipe
(addons/http/recorder.py) and a Sink writes (analyzer/store/journal.py), in the order they came.

Each kind is a named tuple; across the pipe an op goes marshalled as a plain tuple, its kind
first (`plain`), and is named again on the other side (`named`)."""

from __future__ import annotations

from typing import NamedTuple


class SessionOp(NamedTuple):
    """A session begins: its `sessions` row."""
    row: dict
    again: bool = False  # it may be stored already (the recorder process that had it died)
    kind = "session"


class FrameOp(NamedTuple):
    """A frame: its row (store.http_frame_row; seq 0 until the Sink numbers it)."""
    row: tuple
    kind = "frame"

    @property
    def session_id(self) -> str:
        return self.row[0]


class ExchangeOp(NamedTuple):
    """An exchange as seen so far: its `exchanges` row (a later one of the same id replaces it)."""
    row: dict
    kind = "exchange"


class RawExchangeOp(NamedTuple):
    """An exchange as seen so far, raw (addons/http/book.py `Exchange.snapshot`): its row is made
    in the recorder process (addons/http/streams.py `exchange_row`), off the event loop."""
    snapshot: dict
    kind = "xraw"


class EndOp(NamedTuple):
    """A session ends."""
    session_id: str
    ended_at: float | None
    kind = "end"


class StreamOp(NamedTuple):
    """An SSE answer begins: its chunks follow (addons/http/streams.py cuts them into frames)."""
    exchange_id: str
    session_id: str
    encoding: str | None  # its Content-Encoding
    kind = "stream"


class ChunkOp(NamedTuple):
    """A chunk of an SSE answer as it passed; `data` an int: that many bytes of a line already
    past the limit, no CR or LF among them (the tap sends the count alone)."""
    exchange_id: str
    ts: float
    data: bytes | int
    kind = "chunk"


class CloseOp(NamedTuple):
    """An SSE answer ends."""
    exchange_id: str
    ts: float
    kind = "close"


Op = SessionOp | FrameOp | ExchangeOp | RawExchangeOp | EndOp | StreamOp | ChunkOp | CloseOp
KINDS = {cls.kind: cls for cls in (SessionOp, FrameOp, ExchangeOp, RawExchangeOp, EndOp, StreamOp, ChunkOp, CloseOp)}
STREAM_OPS = (StreamOp, ChunkOp, CloseOp, RawExchangeOp)
"""What the recorder's cut (addons/http/streams.py) turns into frames and exchange rows."""


def plain(ops: list[Op]) -> list[tuple]:
    """Ops as marshal takes them: each a tuple of its kind and its fields."""
    return [(op.kind,) + op for op in ops]


def named(items: list[tuple]) -> list[Op]:
    """The ops `plain` gave, named again."""
    kinds = KINDS
    return [kinds[item[0]]._make(item[1:]) for item in items]
