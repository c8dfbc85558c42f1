"""Frame-log JSONL, the interchange format of docs/contract.md: one JSON object per line.

A frame line: {"session": "s1", "seq": 1, "ts": 1764460800.01, "direction": "c2s", "raw": "..."}
(`raw_b64` instead of `raw` for bytes that are not UTF-8; `seq`, `transport`, `meta` optional;
`meta.incomplete` marks a last line that ended without its newline).
mcptap adds two optional record lines, which other tools' logs need not have:
  {"record": "session", "session": ID, "transport": ..., "label": ..., "started_at": ..., ...}
      the session's own row; "spool": true marks a spool written while the database failed;
  {"record": "stderr", "session": ID, "seq": N, "ts": ..., "raw": ...}   a server stderr line;
  {"record": "exchange", "session": ID, "id": ..., ...}   an HTTP exchange (exchangelog.py), and on
      a frame that crossed it `meta.exchange` and `meta.event_id`.
A session record with `"version": 2` is the session's whole row (import adds nothing of its own);
a record without `version` is of version 1, as every log before exchanges were written.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson

from mcptap.wire.exchangelog import ExchangeIn, read_exchange, read_refs
from mcptap.errors import ImportFormatError
from mcptap.wire.sessionfields import FIELD_KINDS, SESSION_FIELDS
from mcptap.wire.textsafe import storable as _text

from mcptap.wire.framelog_write import (  # noqa: F401  (the writing side, used as framelog.NAME)
    DIRECTIONS, VERSION, command_list, dumps, frame_line, frame_record, session_record, stderr_line,
    stderr_record)


# -- reading ----------------------------------------------------------------------------------

@dataclass(slots=True)
class FrameIn:
    session: str
    seq: int | None
    ts: float
    direction: str
    raw: bytes
    incomplete: bool
    transport: str | None
    line: int
    redacted: list | None = None  # meta.redacted: member paths a recorder's redaction replaced
    utf8: bool = False  # `raw` is known to be UTF-8 (it was written as text)
    truncated: int | None = None  # meta.truncated: a frame stored cut at --max-frame, its full size
    exchange: str | None = None  # meta.exchange: the HTTP exchange it crossed in
    event_id: str | None = None  # meta.event_id: its SSE event's id


@dataclass(slots=True)
class StderrIn:
    session: str
    seq: int | None
    ts: float
    raw: bytes
    incomplete: bool
    line: int


@dataclass(slots=True)
class SessionIn:
    session: str
    fields: dict
    spool: bool
    line: int
    whole: bool = False  # version 2: the fields are the session's whole row


Record = FrameIn | StderrIn | SessionIn | ExchangeIn


def _loads(line: bytes):
    """A line's JSON value: orjson, at C speed; what orjson refuses goes through the standard
    library's parser, whose verdict (and leniency: a byte order mark, a lone surrogate in an
    escape, NaN) is the format's, as it always was."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line.strip())


def looks_like_framelog(first_line: bytes) -> bool:
    try:
        obj = _loads(first_line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return looks_like_record(obj)


def looks_like_record(obj) -> bool:
    """Whether a parsed line is a frame-log record: a frame, or a session, stderr or exchange record."""
    return isinstance(obj, dict) and ("direction" in obj or obj.get("record") in ("session", "stderr", "exchange"))


BLOCK_BYTES = 1 << 20
"""How much of a file is read at a time: whole lines, about this many bytes."""


@dataclass(frozen=True, slots=True)
class Block:
    """Whole lines of a frame-log file: `data` is the lines joined by their newlines (the last
    one's left out), the first is line `first_line`; `cut_off`: the last line is the file's
    end and had no newline; `end`: bytes of the file up to the end of this block."""

    data: bytes
    first_line: int
    cut_off: bool
    end: int
    record: dict | None = None  # a line too long to hold, read as it streamed (wire/longline.py): its record


def blocks(path: str, size: int | None = None, keep: int | None = None) -> Iterator[Block]:
    """The file as blocks of whole lines, about `size` (BLOCK_BYTES) bytes each, in order
    (memory: one block, or one longer line). `keep`: a frame line longer than a block (or than
    `keep`) and longline.ROOM is read as it streams, only `keep` bytes of its frame kept (its
    record the block's `record`)."""
    from mcptap.wire import longline

    size = size or BLOCK_BYTES
    with open(path, "rb") as fh:
        line, tail, done = 1, b"", 0
        while chunk := fh.read(size):
            data = tail + chunk if tail else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                if keep is not None and len(data) > min(keep, size) + longline.ROOM:
                    try:
                        found = longline.read_record(data, lambda: fh.read(size), keep)
                    except (ValueError, RecursionError) as exc:
                        raise ImportFormatError(f"{path}:{line}: not a frame-log record ({exc})") from None
                    if found is not None:
                        record, tail, used, ended = found
                        done += used
                        yield Block(b"", line, not ended, done, record)
                        line += 1
                        continue
                tail = data
                continue
            block, tail = data[:cut], data[cut + 1:]
            done += cut + 1
            yield Block(block, line, False, done)
            line += block.count(b"\n") + 1
        if tail:
            yield Block(tail, line, True, done + len(tail))


def records(block: Block, *, path: str, default_session: str, warn: Callable[[str], None],
            names: dict[str, str] | None = None) -> Iterator[Record]:
    """The records of a block's lines, in order. A malformed line raises ImportFormatError
    naming it, except an unterminated last line (a log cut off mid-write), which is skipped with
    a warning. `names` caches checked session names across blocks."""
    names = {} if names is None else names
    if block.record is not None:
        try:
            yield _record(block.record, block.first_line, default_session, names)
        except (ValueError, UnicodeDecodeError, RecursionError, TypeError) as exc:
            raise ImportFormatError(f"{path}:{block.first_line}: not a frame-log record ({exc})") from None
        return
    lines = block.data.split(b"\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        try:
            obj = _loads(line)
            if type(obj) is not dict:
                raise ValueError("not a JSON object")
            rec = _record(obj, block.first_line + i, default_session, names)
        except (ValueError, UnicodeDecodeError, RecursionError, TypeError) as exc:
            if not line.strip():
                continue  # a blank line
            if block.cut_off and i == last:
                warn(f"{path}:{block.first_line + i}: skipped the last line, cut off before its end")
                return
            raise ImportFormatError(f"{path}:{block.first_line + i}: not a frame-log record ({exc})") from None
        yield rec


def read(path: str, *, default_session: str, warn: Callable[[str], None],
         progress: Callable[[int, int], None] | None = None) -> Iterator[Record]:
    """Records of a frame-log file, in file order, a block at a time (memory does not grow with
    the file). `progress(frames, bytes)`: frame records and bytes of the file read so far,
    after each block."""
    names: dict[str, str] = {}  # a session's name as written -> as stored
    frames = 0
    for block in blocks(path):
        for rec in records(block, path=path, default_session=default_session, warn=warn, names=names):
            if rec.__class__ is FrameIn:
                frames += 1
            yield rec
        if progress is not None:
            progress(frames, block.end)


MAX_TIME = 9.2e9
"""Times are Unix seconds within pandas' calendar (1677 to 2262): a time beyond it is no time."""
MAX_INT = 2**63 - 1  # what SQLite's INTEGER holds


def _number(obj: dict, key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key!r} must be a number")
    try:
        value = float(value)
    except OverflowError:
        value = math.inf
    if not -MAX_TIME <= value <= MAX_TIME:  # NaN fails both
        raise ValueError(f"{key!r} must be a time in Unix seconds (years 1677 to 2262)")
    return value


def _time(obj: dict) -> float:
    ts = obj.get("ts")
    if ts.__class__ is float and -MAX_TIME <= ts <= MAX_TIME:  # the common case, checked inline
        return ts
    return _number(obj, "ts")


def _optional_int(obj: dict, key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise ValueError(f"{key!r} must be a non-negative integer below 2**63")
    return value


def _seq(obj: dict) -> int | None:
    seq = obj.get("seq")
    if seq.__class__ is int and 0 <= seq <= MAX_INT:
        return seq
    return _optional_int(obj, "seq")


def _session_fields(obj: dict) -> dict:
    """A session record's columns, each checked: times are times, counts integers, the rest text."""
    fields = {}
    for column in SESSION_FIELDS:
        if column == "id" or column not in obj or obj[column] is None:
            continue
        kind = FIELD_KINDS.get(column, "text")
        if kind == "time":
            fields[column] = _number(obj, column)
        elif kind == "int":
            value = obj[column]
            if isinstance(value, bool) or not isinstance(value, int) or not -MAX_INT <= value <= MAX_INT:
                raise ValueError(f"{column!r} must be an integer")
            fields[column] = value
        elif column == "command" and isinstance(obj[column], list):  # SESSION's form: the argument list
            if not all(isinstance(arg, str) for arg in obj[column]):
                raise ValueError("'command' must be a list of strings")
            fields[column] = _text(json.dumps(obj[column]))
        else:
            if not isinstance(obj[column], str):
                raise ValueError(f"{column!r} must be a string")
            fields[column] = _text(obj[column])
    return fields


def _version(obj: dict) -> int:
    version = obj.get("version", 1)
    if version.__class__ is not int or not 1 <= version <= VERSION:
        raise ValueError(f"'version' {version!r} is not a frame-log version this mcptap reads (1 to {VERSION})")
    return version


def _raw(obj: dict) -> bytes:
    if "raw" in obj:
        if not isinstance(obj["raw"], str):
            raise ValueError("'raw' must be a string")
        return obj["raw"].encode("utf-8", "surrogatepass")
    if "raw_b64" in obj:
        if not isinstance(obj["raw_b64"], str):
            raise ValueError("'raw_b64' must be a string")
        try:
            return base64.b64decode(obj["raw_b64"], validate=True)
        except ValueError:
            raise ValueError("'raw_b64' is not base64") from None
    raise ValueError("no 'raw' or 'raw_b64'")


def _raw_and_utf8(obj: dict) -> tuple[bytes, bool]:
    """The frame's bytes, and whether they are known to be UTF-8: `raw` was text that UTF-8 can
    hold (a lone surrogate, legal in a JSON escape, cannot)."""
    raw = obj.get("raw")
    if raw.__class__ is str:
        try:
            return raw.encode("utf-8"), True
        except UnicodeEncodeError:
            pass
    return _raw(obj), False


def _session_name(obj: dict, default: str) -> str:
    name = obj.get("session", default)
    if isinstance(name, bool) or not isinstance(name, (str, int)) or name == "":
        raise ValueError("'session' must be a non-empty string")
    return _text(str(name))


def _meta(obj: dict) -> dict | None:
    """The line's `meta` object; null is the same as no `meta`."""
    meta = obj.get("meta")
    if meta is not None and meta.__class__ is not dict:
        raise ValueError("'meta' must be an object")
    return meta


def _incomplete(obj: dict) -> bool:
    meta = _meta(obj)
    flag = meta.get("incomplete") if meta else None
    if flag is not None and flag.__class__ is not bool:
        raise ValueError("'meta.incomplete' must be true or false")
    return bool(flag)


def _truncated(obj: dict, stored: int) -> int | None:
    meta = _meta(obj)
    size = meta.get("truncated") if meta else None
    if size is None:
        return None
    if size.__class__ is not int or not stored <= size <= MAX_INT:
        raise ValueError("'meta.truncated' must be the frame's full size in bytes, at least its stored length")
    return size


def _redacted(obj: dict) -> list | None:
    meta = obj.get("meta")
    paths = meta.get("redacted") if isinstance(meta, dict) else None
    if paths is None:
        return None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("'meta.redacted' must be a list of strings")
    return paths


def _record(obj: dict, lineno: int, default_session: str, names: dict[str, str] | None = None) -> Record:
    """One line's record, every field checked. `names` caches the checked session names."""
    kind = obj.get("record", "frame")
    written = obj.get("session", default_session)
    session = names.get(written) if names is not None and written.__class__ is str else None
    if session is None:
        session = _session_name(obj, default_session)
        if names is not None and written.__class__ is str:
            names[written] = session
    if kind == "frame":
        direction = obj.get("direction")
        if direction == "c2s":
            direction = "c2s"  # one str for every frame, not one per line
        elif direction == "s2c":
            direction = "s2c"
        else:
            raise ValueError("'direction' must be \"c2s\" or \"s2c\"")
        transport = obj.get("transport")
        if transport is not None:
            if not isinstance(transport, str):
                raise ValueError("'transport' must be a string")
            transport = _text(transport)
        raw, utf8 = _raw_and_utf8(obj)
        if "meta" in obj:
            incomplete, redacted, truncated = _incomplete(obj), _redacted(obj), _truncated(obj, len(raw))
            exchange, event_id = read_refs(obj["meta"] or {})
        else:
            incomplete, redacted, truncated, exchange, event_id = False, None, None, None, None
        return FrameIn(session, _seq(obj), _time(obj), direction, raw, incomplete, transport, lineno, redacted,
                       utf8, truncated, exchange, event_id)
    if kind == "stderr":
        return StderrIn(session, _optional_int(obj, "seq"), _number(obj, "ts"), _raw(obj), _incomplete(obj), lineno)
    if kind == "session":
        spool = obj.get("spool")
        if spool is not None and spool.__class__ is not bool:
            raise ValueError("'spool' must be true or false")
        return SessionIn(session, _session_fields(obj), bool(spool), lineno, _version(obj) >= 2)
    if kind == "exchange":
        return read_exchange(obj, session, lineno, _text)
    raise ValueError(f"unknown record {kind!r}")
