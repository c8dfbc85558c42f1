"""Import of HTTP captures that mcptap did not record: mitmproxy flow dumps (`mitmdump -w`) and
HAR files (a browser's, or mitmproxy's `hardump`). mitmproxy reads both; each flow then goes
through the same recorder addon as live traffic (addons/http/tap.py), hook by hook, with
the capture's own times, so sessions, exchanges, SSE events and redaction come out as a live
recording's would.

What a capture cannot say: when each SSE event passed (events get their answer's end time; a
plain mitmproxy held the stream until then anyway), and a stream's events when mitmproxy
streamed the body without keeping it (an SSE answer without a body is counted and said)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable

from mcptap.wire.bounded import DEFAULT_MAX_FRAME
from mcptap.addons.http.tap import McpTap
from mcptap.addons.http.streams import Streams
from mcptap import __version__, store
from mcptap.store import journal
from mcptap.store.ops import FrameOp, SessionOp
from mcptap.errors import DuplicateSession, ImportFormatError
from mcptap.readers.importstate import ImportedSession
from mcptap.redaction import Redactor

_ID_SPACE = uuid.UUID("5b0c7c6e-6a38-4d52-9f2e-7d1a3c1f0a11")


def read_flows(path: str) -> list:
    from mitmproxy import exceptions, http
    from mitmproxy.io import FlowReader

    try:
        with open(path, "rb") as fh:
            flows = [f for f in FlowReader(fh).stream() if isinstance(f, http.HTTPFlow)]
    except exceptions.FlowReadException as exc:
        raise ImportFormatError(f"{path}: not a readable mitmproxy dump or HAR file ({exc})") from None
    except RecursionError:
        raise ImportFormatError(f"{path}: not a readable mitmproxy dump (nested too deep)") from None
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc.strerror}") from None
    except Exception as exc:  # noqa: BLE001
        # mitmproxy's reader trusts the records' shapes: whatever it raises on one is a bad file
        # (a ValueError, an OverflowError for a port of inf, an AssertionError, ...)
        raise ImportFormatError(f"{path}: not a readable mitmproxy dump or HAR file "
                                f"({type(exc).__name__}: {_shown(exc)})") from None
    for n, f in enumerate(flows, 1):
        _check_flow(path, n, f)
        # metadata is what addons tell each other during a live run (addons/http/origin_guard.py tells
        # the tap a request was refused): nothing of a saved flow's is read
        f.metadata = {}
    return flows


def _shown(value, limit: int = 60) -> str:
    """A value from the file in a message: ASCII (no terminal escapes), cut."""
    text = ascii(value) if not isinstance(value, BaseException) else ascii(str(value))[1:-1]
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_fields(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(pair, tuple) and len(pair) == 2 and
                                            all(isinstance(part, bytes) for part in pair) for pair in value)


def _is_peer(value) -> bool:
    return value is None or (isinstance(value, tuple) and len(value) >= 2 and isinstance(value[0], str) and
                             _is_int(value[1], 0, 65535))


_UUID_TEXT = 200  # an id mitmproxy writes is a UUID: 36 characters


def _check_flow(path: str, n: int, f) -> None:
    """What the recorder addon reads of a flow has the type mitmproxy gives it live: mitmproxy's
    reader takes many fields of a crafted dump as they are (an id that is a list or 2**70, an error
    that is 0). ImportFormatError names the first field that has not."""
    from mitmproxy import flow as mflow

    req, resp = f.request, f.response
    checks = [
        ("an id", f.id, isinstance(f.id, str) and 0 < len(f.id) <= _UUID_TEXT),
        ("a client connection id", f.client_conn.id, isinstance(f.client_conn.id, str)),
        ("a client address", f.client_conn.peername, _is_peer(f.client_conn.peername)),
        ("an error", f.error, f.error is None or (isinstance(f.error, mflow.Error) and isinstance(f.error.msg, str))),
        ("a request method", req.data.method, isinstance(req.data.method, bytes)),
        ("a request scheme", req.data.scheme, isinstance(req.data.scheme, bytes)),
        ("a request host", req.data.host, isinstance(req.data.host, str)),
        ("a request port", req.data.port, _is_int(req.data.port, 0, 65535)),
        ("a request path", req.data.path, isinstance(req.data.path, bytes)),
        ("request headers", req.data.headers.fields, _is_fields(req.data.headers.fields)),
        ("a request body", req.data.content, req.data.content is None or isinstance(req.data.content, bytes)),
    ]
    if resp is not None:
        checks += [
            ("a status", resp.data.status_code, isinstance(resp.data.status_code, int)),
            ("answer headers", resp.data.headers.fields, _is_fields(resp.data.headers.fields)),
            ("an answer body", resp.data.content, resp.data.content is None or isinstance(resp.data.content, bytes)),
        ]
    for what, value, ok in checks:
        if not ok:
            raise ImportFormatError(f"{path}: flow {n} has {what} of the wrong type or size ({_shown(value)})")


def _har_entries(path: str, flows: list) -> dict[int, list[tuple[float, int]]]:
    """What mitmproxy's HAR reader leaves out, from the entries themselves. Times: it dates the
    request's end and the whole answer at the entry's end; the entry's timings say better (send,
    wait, receive; -1 is unknown). Errors: an entry that got no answer (status 0, its `_error`
    saying why, as mitmproxy's and browsers' HAR exports write it) is a flow that ended in that
    error, not an answer with status 0. Events: an answer body whose `content._events` (mcptap's
    own HAR export) says when each SSE event passed, as [time, end offset] pairs, is fed event by
    event at those times (flow index -> [(time, end offset)])."""
    from mitmproxy import flow as mflow

    chunks: dict[int, list[tuple[float, int]]] = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            entries = json.load(fh)["log"]["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return chunks
    if not isinstance(entries, list):
        return chunks
    for n, (f, entry) in enumerate(zip(flows, entries)):
        events = _event_times(entry, f)
        if events:
            chunks[n] = events
        timings = entry.get("timings") if isinstance(entry, dict) else None
        if not isinstance(timings, dict):
            timings = {}

        def ms(name: str) -> float:
            value = timings.get(name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e12  # finite, sane
            return value / 1000 if ok else 0.0

        sent = f.request.timestamp_start + ms("blocked") + ms("dns") + ms("connect") + ms("send")
        f.request.timestamp_end = sent
        answer = entry.get("response")
        why = answer.get("_error") if isinstance(answer, dict) else None
        if f.response is not None and (f.response.status_code == 0 or (isinstance(why, str) and why)):
            total = entry.get("time")
            ended = f.request.timestamp_start + (total / 1000 if isinstance(total, (int, float)) and
                                                 not isinstance(total, bool) and 0 <= total < 1e12 else 0.0)
            f.error = mflow.Error(why if isinstance(why, str) and why else "no answer", ended)
            if f.response.status_code == 0:  # no answer at all
                f.response = None
                continue
        if f.response is not None:
            f.response.timestamp_start = sent + ms("wait")
            f.response.timestamp_end = f.response.timestamp_start + ms("receive")
    return chunks


def _event_times(entry, f) -> list[tuple[float, int]]:
    """An entry's `response.content._events` as (time, end offset) pairs in order, when each is
    a finite time and an offset inside the body that only grows, and the body is not
    content-encoded (offsets are of the decoded body); else none."""
    content = entry.get("response", {}).get("content") if isinstance(entry, dict) else None
    events = content.get("_events") if isinstance(content, dict) else None
    if not isinstance(events, list) or f.response is None or f.response.headers.get("content-encoding", "identity") \
            not in ("identity", ""):
        return []
    size = len(f.response.raw_content or b"")
    out, last = [], 0
    for pair in events:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                    for v in pair)):
            return []
        at, end = pair
        if not (0 <= at <= 1e11 and isinstance(end, int) and last <= end <= size):
            return []
        out.append((float(at), end))
        last = end
    return out


def _check_times(path: str, flows: list) -> None:
    """Every time stamp a real capture can hold: Unix seconds in the calendar the readers use
    (analyzer/wire/framelog.py MAX_TIME), or none."""
    from mcptap.wire.framelog import MAX_TIME

    for n, f in enumerate(flows, 1):
        for part in (f.request, f.response):
            for name in ("timestamp_start", "timestamp_end"):
                value = getattr(part, name, None) if part is not None else None
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not -MAX_TIME <= value <= MAX_TIME:
                    raise ImportFormatError(f"{path}: flow {n} has a {name.replace('_', ' ')} that is no time ({value!r})")


_HOOKS = ("request", "responseheaders", "chunk", "response", "error")


def _timeline(flows: list, chunks: dict | None = None) -> list[tuple]:
    """(time, tie-break, hook, flow, chunk end, clock) for each flow's request, answer headers,
    the events of its answer whose times are known (`chunks`), and answer end (or error), sorted
    by time: a stream that ends after a DELETE still began before it. `clock` is the time the
    hook runs at. An event is ordered between its answer's headers and end whatever its own time
    says (a HAR dates the headers from rounded timings, which may put them a microsecond after
    the first event): it keeps its own time as its clock."""
    events = []
    for n, f in enumerate(flows):
        start = f.request.timestamp_end or f.request.timestamp_start
        events.append((start, n, "request", f, None, start))
        if f.response is not None:  # its end: the answer's, or the error that cut it short
            headers = f.response.timestamp_start or start
            events.append((headers, n, "responseheaders", f, None, headers))
            end = f.error.timestamp if f.error is not None and f.error.timestamp else f.response.timestamp_end
            end = end or headers
            for at, offset in (chunks or {}).get(n, ()):
                events.append((min(max(at, headers), max(end, headers)), n, "chunk", f, offset, at))
            events.append((end, n, "response", f, None, end))
        elif f.error is not None:
            events.append((f.error.timestamp or start, n, "error", f, None, f.error.timestamp or start))
    events.sort(key=lambda e: (e[0], e[1], _HOOKS.index(e[2]), e[4] or 0))
    return events


def import_capture(conn: sqlite3.Connection, path: str, kind: str, *, new_id: bool = False,
                   keep_credentials: bool = False, warn: Callable[[str], None] = lambda m: None,
                   redactor=None, max_frame: int = DEFAULT_MAX_FRAME) -> list:
    """Import one capture in one transaction: all of it or none of it. Returns ImportedSession rows.
    Bodies are decoded a step at a time and a frame larger than `max_frame` is stored cut
    (analyzer/wire/bounded.py): a decompression bomb in a capture costs time, not memory."""
    flows = read_flows(path)
    chunks = _har_entries(path, flows) if kind == "har" else {}
    _check_times(path, flows)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    collector = journal.Collector()
    tap = McpTap(recorder=f"mcptap {__version__} import", journal=collector,
                 redactor=Redactor(keep=keep_credentials), label=os.path.basename(path), source=os.path.abspath(path),
                 max_frame=max_frame)
    if not new_id:  # the same file imported twice gives the same session ids
        seen: dict[str, int] = {}

        def stable_id(key: tuple) -> str:  # a key's first session, its second (after a DELETE), ...
            name = json.dumps(key)
            seen[name] = seen.get(name, 0) + 1
            return str(uuid.uuid5(_ID_SPACE, f"{digest}\0{name}\0{seen[name]}"))

        tap.new_id = stable_id
    empty = 0
    last = 0.0
    fed: dict[int, int] = {}  # id(flow) -> how much of its body the events with times fed
    for _, _, hook, f, end, at in _timeline(flows, chunks):  # the hooks in the order a live proxy would have run them
        last = max(last, at)
        tap.clock = lambda at=at: at
        if hook == "request":
            tap.request(f)
        elif hook == "responseheaders":
            tap.responseheaders(f)
        elif hook == "chunk":
            stream = f.response.stream
            if callable(stream):
                start = fed.get(id(f), 0)
                if end > start:
                    stream(f.response.raw_content[start:end])
                fed[id(f)] = max(start, end)
        elif hook == "response":
            stream = f.response.stream
            if callable(stream):
                body = f.response.raw_content
                if body is None or (kind == "har" and not body and f.request.method == "POST"):
                    empty += 1  # (a GET stream may rightly carry no event)
                stream((body or b"")[fed.get(id(f), 0):])
                if f.error is None:  # a clean end (a cut stream ends with the error hook alone, as live)
                    stream(b"")
            if f.error is not None:  # the answer was cut short (the client went away, ...)
                tap.error(f)
            else:
                tap.response(f)
        else:
            tap.error(f)
    tap.clock = lambda: last
    tap.done()
    if empty:
        said = ("to POSTs have an empty body (a HAR export of an answer mitmproxy streamed looks like this)"
                if kind == "har"
                else "have no body in the file (mitmproxy streamed them without keeping them)")
        warn(f"{path}: {empty} SSE answer(s) {said}: their events, if any, are not imported")
    ops = journal.redact(journal.number(Streams(max_frame=max_frame).cut(collector.ops), {}), redactor)
    sessions = [op.row for op in ops if op.__class__ is SessionOp]
    for s in sessions:
        if store.session_exists(conn, s["id"]):
            raise DuplicateSession(f"{path}: already imported (session {s['id']}); use --new-id to import it again")
    counts: dict[str, int] = {}
    for op in ops:
        if op.__class__ is FrameOp:
            counts[op.session_id] = counts.get(op.session_id, 0) + 1
    with store.write_transaction(conn):
        journal.apply(conn, ops)
    return [ImportedSession(s["id"], f"{s['transport']} session", counts.get(s["id"], 0)) for s in sessions]
