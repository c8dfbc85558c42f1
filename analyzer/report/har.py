"""`mcptap export --format har`: HTTP sessions as HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/),
one entry per exchange in start order: method, URL, status, request and response headers as
stored (credentials redacted as recorded), the request body and the answer body whole (a JSON
answer, or an SSE stream rebuilt event by event with its ids, the legacy `endpoint` event first),
timings from the recording (send, wait, receive), `_error` where the exchange ended in one. An
answer body that is not UTF-8 is base64 (`content.encoding`); an SSE answer says when each event
passed (`content._events`: [time, end offset in the body] pairs). `mcptap import` of the file gives
back the same frames (analyzer/readers/http_capture.py). Written entry by entry; a session's
frames are held while its entries are written."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import datetime, timezone
from typing import IO
from urllib.parse import parse_qsl, urlsplit

import orjson

import mcptap
from mcptap import store
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.store import queries
from mcptap.wire.textsafe import json_text

HTTP_TRANSPORTS = ("http", "sse")


def _iso(ts: float | None) -> str:
    return datetime.fromtimestamp(ts or 0.0, timezone.utc).isoformat().replace("+00:00", "Z")


def _ms(a: float | None, b: float | None) -> float:
    """Milliseconds from a to b; 0 when either is not known (HAR's send, wait and receive)."""
    return 0.0 if a is None or b is None else max((b - a) * 1000.0, 0.0)


def _headers(cell: str | None) -> list[dict]:
    return [{"name": n, "value": v} for n, v in (json.loads(cell) if cell else [])]


def _content(body: bytes, mime: str) -> dict:
    content = {"size": len(body), "mimeType": mime}
    try:
        content["text"] = body.decode("utf-8")
    except UnicodeDecodeError:
        content["text"], content["encoding"] = base64.b64encode(body).decode("ascii"), "base64"
    return content


def sse_body(frames: list[store.Frame], endpoint: str | None, opened: float | None) -> tuple[bytes, list]:
    """An SSE stream again from its stored events: the legacy endpoint event (at `opened`), then
    each frame as an event with its id and its data lines (an event cut off at the stream's end
    stays cut); and when each event passed, as [time, end offset] pairs (`content._events`)."""
    parts: list[bytes] = []
    times: list = []
    size = 0
    if endpoint:
        parts.append(b"event: endpoint\ndata: " + endpoint.encode("utf-8") + b"\n\n")
        size = len(parts[0])
        if opened is not None:
            times.append([opened, size])
    for f in frames:
        unfinished = f.incomplete and not f.cut  # the stream ended inside the event
        event = (b"id: " + f.event_id.encode("utf-8") + b"\n") if f.event_id is not None else b""
        event += b"".join(b"data: " + line + b"\n" for line in f.raw.split(b"\n"))
        event = event if unfinished else event + b"\n"
        parts.append(event)
        size += len(event)
        if not unfinished:
            times.append([f.ts, size])
    return b"".join(parts), times


def entry(exchange: dict, frames: list[store.Frame]) -> dict:
    sent = [f.raw for f in frames if f.direction == "c2s"]
    answers = [f for f in frames if f.direction == "s2c"]
    request_body = sent[0] if sent else b""
    response_type = exchange.get("response_type") or ""
    times = None
    if response_type.startswith("text/event-stream"):
        body, times = sse_body(answers, exchange.get("endpoint"), exchange.get("response_at"))
    else:
        body = b"".join(f.raw for f in answers)
    outcome = exchange.get("outcome") or ""
    url = exchange.get("url") or ""
    request = {"method": exchange.get("method") or "", "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
               "headers": _headers(exchange.get("request_headers")),
               "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)],
               "headersSize": -1, "bodySize": len(request_body)}
    if request_body or exchange.get("method") == "POST":
        request["postData"] = {"mimeType": exchange.get("request_type") or "",
                               "text": request_body.decode("utf-8", "replace")}
    response = {"status": exchange.get("status") or 0, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
                "headers": _headers(exchange.get("response_headers")),
                "content": {**_content(body, response_type), **({"_events": times} if times else {})},
                "redirectURL": "", "headersSize": -1, "bodySize": len(body) if exchange.get("status") else -1}
    if outcome.startswith("error: ") or (exchange.get("status") is None and outcome != "complete"):
        response["_error"] = outcome.removeprefix("error: ") or "no answer"
    started, request_end = exchange.get("started_at"), exchange.get("request_end")
    response_at, ended = exchange.get("response_at"), exchange.get("ended_at")
    return {"startedDateTime": _iso(started), "time": _ms(started, ended if ended is not None else response_at),
            "request": request, "response": response, "cache": {},
            "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": _ms(started, request_end),
                        "wait": _ms(request_end, response_at), "receive": _ms(response_at, ended)},
            "_mcptap": {"session": exchange.get("session_id"), "exchange": exchange.get("id"), "outcome": outcome}}


def _dumps(value: dict) -> bytes:
    """An entry as JSON, every character a terminal would act on or hide (and a lone surrogate, a
    header byte that was not UTF-8) written as its JSON escape (textsafe.json_text)."""
    try:
        text = orjson.dumps(value).decode("utf-8")
    except TypeError:  # a lone surrogate: orjson refuses it
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json_text(text).encode("utf-8")


def write(conn: sqlite3.Connection, out: IO[bytes], options: WriteOptions = NO_OPTIONS) -> int:
    """The exchanges of `options.sessions` as one HAR 1.2 document; the number of entries."""
    progress = options.progress
    out.write(b'{"log":{"version":"1.2","creator":{"name":"mcptap","version":"' + mcptap.__version__.encode() +
              b'"},"pages":[],"entries":[')
    n = 0
    for sid in options.sessions:
        by_exchange: dict[str | None, list[store.Frame]] = {}
        count = 0
        for f in queries.exchange_frames(conn, sid):
            by_exchange.setdefault(f.exchange_id, []).append(f)
            count += 1
        for exchange in store.session_exchanges(conn, sid):
            out.write((b"," if n else b"") + b"\n" + _dumps(entry(exchange, by_exchange.pop(exchange["id"], []))))
            n += 1
        if progress is not None:
            progress(count)
    out.write(b"\n]}}\n")
    return n
