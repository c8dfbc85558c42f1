"""Fuzz target for capture import (analyzer/readers/http_capture.py: mitmproxy dumps and HAR files, read by
mitmproxy and played through the recorder addon) with atheris, libFuzzer for Python. Not a test and
not a dependency.

    pip install atheris
    python bench/fuzz_capture.py                          # 30 s
    python bench/fuzz_capture.py -max_total_time=60       # or -runs=N; any libFuzzer flag or corpus folder
    python bench/fuzz_capture.py --keep-going             # report each distinct failure once and go on
    python bench/fuzz_capture.py crash-<sha1>             # replay one input

One input is one capture. Its first byte says how the rest makes the file: 0, the file's bytes as
they are (a mitmproxy dump or a HAR file, mutated byte by byte); 1, a real mitmproxy dump whose
flows get fields of any type (an id of 2**70, a list for text, a port of inf, header bytes that are
not UTF-8, a field missing), chosen by the rest and written with mitmproxy's own tnetstring writer;
2, a real HAR file changed the same way, as JSON. The capture must be imported whole (the frames it
says it stored are the frames the database gained, every exchange's headers JSON that json.loads
reads as [name, value] text pairs) or refused with mcptap's one-line error (an MCPTapError); any
other exception is a failure. Without --keep-going the first failure stops the run (libFuzzer
writes the input to crash-<sha1> in the temporary folder it names); with it, each failure is
printed once (exception and place) and the run goes on.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import sys
import tempfile
from pathlib import Path

try:
    import atheris
except ImportError:
    print("fuzz_capture: atheris is not installed (pip install atheris): nothing fuzzed")
    sys.exit(0)

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["mcptap"]):
    from mcptap.readers.http_capture import import_capture
    from mcptap import store
    from mcptap.readers import importer
    from mcptap.errors import MCPTapError
    from mcptap.redaction import FrameRedactor

from mitmproxy.io import FlowWriter, tnetstring  # noqa: E402
from mitmproxy.test import tflow  # noqa: E402

import fuzzing  # noqa: E402

FRESH_DB_EVERY = 500  # imports into one in-memory database before a new one (memory stays flat)
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'


def _answer(ident: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{}}' % ident


def _flows() -> list:
    """An MCP session as mitmdump saves it: initialize answered in JSON with a session id and an
    obs-text header, tools/list answered by SSE, a legacy GET stream cut by an error, a DELETE."""
    init = tflow.tflow(resp=True)
    init.request.method, init.request.path, init.request.content = "POST", "/mcp?token=t", INIT
    init.request.headers["content-type"] = "application/json"
    init.request.headers["authorization"] = "Bearer s3cret"
    init.response.headers.clear()
    init.response.headers["content-type"] = "application/json"
    init.response.headers["mcp-session-id"] = "s1"
    init.response.headers[b"x-name"] = b"caf\xe9"
    init.response.content = _answer(1)
    listing = tflow.tflow(resp=True)
    listing.request.method, listing.request.path, listing.request.content = "POST", "/mcp", LIST
    listing.request.headers["mcp-session-id"] = "s1"
    listing.request.headers["mcp-protocol-version"] = "2025-11-25"
    listing.response.headers.clear()
    listing.response.headers["content-type"] = "text/event-stream"
    listing.response.content = b"id: 1\ndata: " + _answer(2) + b"\n\n"
    stream = tflow.tflow(err=True)
    stream.request.method, stream.request.path = "GET", "/sse"
    stream.request.headers["accept"] = "text/event-stream"
    delete = tflow.tflow(resp=True)
    delete.request.method, delete.request.path, delete.request.content = "DELETE", "/mcp", b""
    delete.request.headers["mcp-session-id"] = "s1"
    delete.response.headers.clear()
    for n, f in enumerate((init, listing, stream, delete)):
        f.request.timestamp_start = f.request.timestamp_end = 1_764_460_800.0 + n
        if f.response is not None:
            f.response.timestamp_start, f.response.timestamp_end = 1_764_460_800.2 + n, 1_764_460_800.5 + n
    return [init, listing, stream, delete]


def _dump(flows) -> bytes:
    buffer = io.BytesIO()
    writer = FlowWriter(buffer)
    for f in flows:
        writer.add(f)
    return buffer.getvalue()


def _har_entry(method: str, body: bytes, answer: bytes, answer_type: str) -> dict:
    return {"startedDateTime": "2026-11-30T10:00:00.000Z", "time": 12.5,
            "request": {"method": method, "url": "http://127.0.0.1:8000/mcp?token=t", "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "content-type", "value": "application/json"},
                                    {"name": "mcp-session-id", "value": "s1"}],
                        "queryString": [], "cookies": [], "headersSize": -1, "bodySize": len(body),
                        "postData": {"mimeType": "application/json", "text": body.decode()}},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [{"name": "content-type", "value": answer_type},
                                     {"name": "mcp-session-id", "value": "s1"}],
                         "content": {"size": len(answer), "mimeType": answer_type, "text": answer.decode()},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(answer)},
            "cache": {}, "timings": {"send": 1, "wait": 10, "receive": 1.5}}


HAR = {"log": {"version": "1.2", "creator": {"name": "fuzz", "version": "1"}, "entries": [
    _har_entry("POST", INIT, _answer(1), "application/json"),
    _har_entry("POST", LIST, b"data: " + _answer(2) + b"\n\n", "text/event-stream")]}}
STATES = [f.get_state() for f in _flows()]

SEEDS = [b"\x00" + _dump(_flows()), b"\x00" + json.dumps(HAR).encode(), b"\x01" + bytes(range(64)),
         b"\x02" + bytes(range(64, 0, -1)), b"\x01\x00\x00\x07\x03caf\xe9", b"\x02\x01\x05\x02inf"]
DICTIONARY = [b"~", b"0:~", b"!", b"4:true!", b"^", b"3:inf^", b"3:nan^", b"#", b"21:1180591620717411303424#",
              b";", b",", b"]", b"}", b"0:]", b"0:}", b"2:id;", b"7:headers;", b"8:peername;", b"4:port;",
              b"5:error;", b"11:status_code;", b"7:content;", b'"entries"', b'"request"', b'"response"',
              b'"headers"', b'"status"', b'"timings"', b'"postData"', b'"text"', b'"url"', b"NaN", b"Infinity",
              b"\\ud800", b"\\udce9", b"\xe9", b"\xff", b"1e999", b"9" * 25, b"text/event-stream",
              b"mcp-session-id", b"content-encoding", b"gzip", b"data: ", b"\n\n"]


def _paths(state, path=()):
    """Every field of a state by its keys and indexes, inner ones first."""
    if isinstance(state, dict):
        for key, value in state.items():
            yield from _paths(value, path + (key,))
    elif isinstance(state, (list, tuple)):
        for n, value in enumerate(state):
            yield from _paths(value, path + (n,))
    if path:
        yield path


def _thawed(state):
    if isinstance(state, (list, tuple)):
        return [_thawed(x) for x in state]
    if isinstance(state, dict):
        return {k: _thawed(v) for k, v in state.items()}
    return state


PATHS = [list(_paths(_thawed(s))) for s in STATES]
HAR_PATHS = list(_paths(HAR))
_DELETE = object()


def _value(fdp, text_only: bool):
    """A value of any type a tnetstring (or, `text_only`, JSON) holds, from the fuzzer's bytes."""
    kind = fdp.ConsumeIntInRange(0, 11)
    if kind == 0:
        return fdp.ConsumeIntInRange(-(1 << 80), 1 << 80)
    if kind == 1:
        return [math.inf, -math.inf, math.nan, 1e308, -0.0][fdp.ConsumeIntInRange(0, 4)]
    if kind == 2:
        return fdp.ConsumeRegularFloat()
    if kind == 3:
        return None
    if kind == 4:
        return fdp.ConsumeBool()
    if kind == 5:
        return [] if fdp.ConsumeBool() else [fdp.ConsumeUnicodeNoSurrogates(4)]
    if kind == 6:
        return {}
    if kind == 7:
        return _DELETE
    if kind in (8, 9) and not text_only:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 24))
    return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 24))


def _changed(state, paths: list, fdp, text_only: bool):
    state = copy.deepcopy(state)
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        path = paths[fdp.ConsumeIntInRange(0, len(paths) - 1)]
        where = state
        try:
            for step in path[:-1]:
                where = where[step]
            value = _value(fdp, text_only)
            if value is _DELETE:
                del where[path[-1]]
            else:
                where[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass  # a field an earlier change took away
    return state


def capture(data: bytes) -> bytes:
    """The capture file one input makes."""
    mode, rest = (data[0] % 3, data[1:]) if data else (0, b"")
    if mode == 0:
        return rest
    fdp = atheris.FuzzedDataProvider(rest)
    if mode == 1:
        buffer = io.BytesIO()
        for _ in range(fdp.ConsumeIntInRange(1, 3)):
            n = fdp.ConsumeIntInRange(0, len(STATES) - 1)
            tnetstring.dump(_changed(_thawed(STATES[n]), PATHS[n], fdp, False), buffer)
        return buffer.getvalue()
    return json.dumps(_changed(HAR, HAR_PATHS, fdp, True)).encode()


_folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
_path = os.path.join(tempfile.mkdtemp(prefix="fuzz_capture-", dir=_folder), "capture")
_redactor = FrameRedactor(None)
_state = {"conn": None, "imports": 0}


def _conn():
    if _state["conn"] is None or _state["imports"] >= FRESH_DB_EVERY:
        if _state["conn"] is not None:
            _state["conn"].close()
        _state["conn"], _state["imports"] = store.connect(":memory:"), 0
    _state["imports"] += 1
    return _state["conn"]


def check_capture(data: bytes) -> None:
    with open(_path, "wb") as fh:
        fh.write(capture(data))
    conn = _conn()
    before = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    exchanges = conn.execute("SELECT count(*) FROM exchanges").fetchone()[0]
    try:
        kind = importer.detect_format(_path)
        if kind == "framelog":
            return  # not a capture
        sessions = import_capture(conn, _path, kind, new_id=True, redactor=_redactor)
    except MCPTapError:
        assert conn.execute("SELECT count(*) FROM frames").fetchone()[0] == before, "a refused capture left frames"
        assert not conn.in_transaction, "a refused capture left its transaction open"
        return
    stored = conn.execute("SELECT count(*) FROM frames").fetchone()[0] - before
    assert stored == sum(s.frames for s in sessions), f"{stored} frames stored, {sum(s.frames for s in sessions)} said"
    for headers in conn.execute("SELECT request_headers FROM exchanges LIMIT -1 OFFSET ?", (exchanges,)).fetchall() + \
            conn.execute("SELECT response_headers FROM exchanges LIMIT -1 OFFSET ?", (exchanges,)).fetchall():
        if headers[0] is not None:
            pairs = json.loads(headers[0])
            assert all(len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs), f"headers {headers[0]!r}"


def main() -> None:
    fuzzing.run("fuzz_capture", check_capture, SEEDS, DICTIONARY)


if __name__ == "__main__":
    main()
