"""The records the session core keeps of what it reads: a message (`Msg`: a whole frame or a
batch element, and for a request also its record of pairing), one read from its envelope alone
(`WireMsg`), a frame (`Frame`), and the keys ids are paired by (`id_key`, `loose_key`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from mcptap.analysis import mcp
from mcptap.analysis.classify import REQUEST, Signature
from mcptap.wire import jsonwire
from mcptap.wire.jsonwire import NumberText

_MISSING = mcp.ABSENT
_ITSELF = object()
UNREAD = object()
"""A frame's value not read yet (None is a value): the reader parses it itself."""



# A `messages` row as the session core builds it, a list (the core fills in the pair when the answer
# comes; the store inserts the cells as they are): the fields of `Message`, in order. Read by name
# outside the core: `Message.of(row)`.
MessageRow = list


class Message(NamedTuple):
    """A `messages` row read by name: one frame (idx None) or batch element, its kind, JSON-RPC
    id (JSON text) and method, and the frame it is paired with and the latency."""

    session_id: str
    frame_seq: int
    idx: int | None
    direction: str
    kind: str
    id: str | None
    method: str | None
    paired_frame: int | None
    latency_s: float | None

    @classmethod
    def of(cls, row: MessageRow) -> "Message":
        return cls._make(row)


class Finding(NamedTuple):
    """A `findings` row: where (session, frame and batch element; no frame: the whole session),
    what (the rule's code, the severity its profile or policy gives, a one-line message), and the
    frame it relates to, if any."""

    session_id: str
    frame_seq: int | None
    idx: int | None
    code: str
    severity: str
    message: str
    related_frame: int | None = None


FindingRow = Finding


class Msg:
    """One JSON-RPC message: a whole frame, or one element of a batch. A request is also its own
    record of pairing (its response, cancellation, progress token). A plain class with defaults
    on the class: a message sets only what it has, which keeps a million of them cheap."""

    method: str | None = None
    id: Any = _MISSING
    row: MessageRow | None = None
    # facts the session core works out, for the rules
    pairing: str | None = None
    _request: "Msg | None" = None
    related: int | None = None
    fact: str | None = None
    probe: bool = False  # a 2026-07-28 request sent before initialize by a dual-era client
    # a request's own record
    id_json: str | None = None  # its id as written (JSON text), when it has one
    cancelled: int | None = None  # seq of the notifications/cancelled naming it
    rejected: bool = False  # its batch was refused as a whole (where batches are forbidden)
    token: Any = None  # progress token key it carried
    stream_closed: bool = False  # 2026-07-28 over HTTP: its client closed the exchange before the answer (cancelled)
    log_level: bool = False  # 2026-07-28: it set _meta logLevel
    batch: "Frame | None" = None  # the batch it came in
    tool_name: str | None = None  # tools/call: the tool it named, once its params passed the schema (results.py)

    def __init__(self, seq: int, idx: int | None, ts: float, direction: str, value: Any, sig: Signature, kind: str,
                 frame: "Frame"):
        self.seq, self.idx, self.ts, self.direction = seq, idx, ts, direction
        self.value, self.sig, self.kind, self.frame = value, sig, kind, frame

    @property
    def request(self) -> "Msg | None":
        """For a response: the request it answers; for a request: itself (kept as a mark, not a
        reference to itself: a million requests make no cycles for the collector to find)."""
        request = self._request
        return self if request is _ITSELF else request

    @request.setter
    def request(self, value: "Msg | None") -> None:
        self._request = _ITSELF if value is self else value

    @property
    def has_id(self) -> bool:
        return self.id is not _MISSING

    @property
    def params(self) -> Any:
        return self.value.get("params") if type(self.value) is dict else None

    def meta(self) -> dict:
        params = self.params
        meta = params.get("_meta") if type(params) is dict else None
        return meta if type(meta) is dict else {}


Req = Msg  # a request, in its role as the record its response is paired with


class WireMsg(Msg):
    """A message the fast path read from its envelope alone (analyzer/_wirescan.c): everything
    the core needs is set, and its value is parsed, exactly, only if a rule asks for it."""

    idx = None
    frame = None

    def __init__(self, seq: int, ts: float, direction: str, raw: bytes, sig: Signature, kind: str, method,
                 ident, id_json, row):
        self.seq, self.ts, self.direction, self.raw, self.sig, self.kind = seq, ts, direction, raw, sig, kind
        self.method, self.id, self.id_json, self.row = method, ident, id_json, row
        if kind is REQUEST:
            # what the core reads of every request, on the instance: found at once (an attribute
            # left to the class's default is a slower lookup on every read in Python 3.11)
            self.pairing, self.batch, self.cancelled, self.token, self.log_level = "new", None, None, None, False

    @property
    def request(self) -> Msg | None:
        """A request is its own record (a property, not `self.request = self`: no reference cycle
        for the garbage collector to find, a million times)."""
        return self if self.kind is REQUEST else None

    @property
    def value(self) -> Any:
        return jsonwire.parse(self.raw).value


class Frame:
    """One frame: its parse, and its messages (one, or a batch's elements)."""

    __slots__ = ("seq", "ts", "direction", "parsed", "value", "sig", "kind", "elements")

    def __init__(self, seq, ts, direction, parsed, value, sig, kind):
        self.seq, self.ts, self.direction, self.parsed = seq, ts, direction, parsed
        self.value, self.sig, self.kind = value, sig, kind
        self.elements: list[Msg] = []


def id_key(value: Any) -> tuple:
    """Exact identity of an id for pairing: type and value as written (7, "7" and 7.0 differ)."""
    kind = type(value)
    if kind is int:
        return ("n", value)
    if kind is str:
        return ("s", value)
    if kind is NumberText or kind is float:
        return ("t", jsonwire.to_json(value))
    return ("x", jsonwire.to_json(value))


def loose_key(value: Any) -> str | None:
    """Identity across types, to catch `7` answered as `"7"` or `7.0`."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return str(int(value)) if value.is_integer() else jsonwire.to_json(value)
    if type(value) is NumberText:
        if value.is_integer_literal:
            return value.text
        if value.is_integral:
            return value.integral_text()
        return value.text
    return None
