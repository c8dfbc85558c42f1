"""Capture never dies on a byte: a real `mcptap proxy` in front of a
real upstream carrying header and URL bytes that are not UTF-8, and crafted mitmproxy dumps (every
field of a flow given a value of the wrong type, written with mitmproxy's own io writer), each
imported whole or refused with a one-line error."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import signal
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mitmproxy import io as mitm_io
from mitmproxy.io import tnetstring
from mitmproxy.test import tflow

from mcptap.readers.http_capture import import_capture
from mcptap import store
from mcptap.readers import importer
from mcptap.errors import MCPTapError
from mcptap.store.journal import Sink
from mcptap.store.ops import ExchangeOp, FrameOp, SessionOp
from mcptap.redaction import FrameRedactor, Redactor
from tests.conftest import alive, mcptap, rows, run, wait_for
from tests.support import httpserve
from tests.support.http_helpers import mcptap_proxy
from tests.hostile.test_hostile import assert_clean, assert_one_line_error

RECORD_TIMEOUT_S = 60  # a loaded machine: the recorder process runs at the lowest priority
OBS_TEXT = b"caf\xe9"  # a legal header value (RFC 9110 obs-text), not UTF-8


def _answer(body: bytes) -> bytes:
    ident = json.loads(body).get("id", 0)
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": {}}).encode()


class _Upstream(httpserve.QuietHandler):
    """An MCP server of one JSON answer per POST, which answers with an obs-text header too."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        answer = _answer(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "s1")
        self.send_header("X-Name", OBS_TEXT.decode("latin-1"))  # http.server writes headers as Latin-1
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@contextlib.contextmanager
def upstream():
    with httpserve.serving(_Upstream) as server:
        yield httpserve.url(server)


def _post(proxy_url: str, target: bytes, body: bytes, *extra: bytes) -> bytes:
    """One POST over a socket of its own, its request line and headers exactly as given."""
    host, port = proxy_url.removeprefix("http://").rsplit(":", 1)
    head = [b"POST " + target + b" HTTP/1.1", b"Host: " + host.encode() + b":" + port.encode(),
            b"Content-Type: application/json", b"Accept: application/json, text/event-stream",
            b"Content-Length: " + str(len(body)).encode(), b"Connection: close", *extra]
    with socket.create_connection((host, int(port)), timeout=RECORD_TIMEOUT_S) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as fh:
        return [int(p) for p in fh.read().split()]


INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


def _hostile_then_ordinary(proxy, db: Path, frames: int) -> None:
    """A POST whose URL and header hold bytes that are not UTF-8 (answered with such a header too),
    then an ordinary one; until the database holds `frames` frames and both exchanges ended."""
    hostile = _post(proxy.url, b"/mcp?q=\xff", INIT, b"X-Name: " + OBS_TEXT)
    assert hostile.startswith(b"HTTP/1.1 200") and b"X-Name: " + OBS_TEXT in hostile
    ordinary = _post(proxy.url, b"/mcp", LIST, b"Mcp-Session-Id: s1")
    assert ordinary.startswith(b"HTTP/1.1 200")
    wait_for(lambda: len(rows(db, "SELECT 1 FROM frames", missing_ok=True)) == frames, RECORD_TIMEOUT_S, f"{frames} frames recorded")
    wait_for(lambda: len(rows(db, "SELECT 1 FROM exchanges WHERE outcome IS NOT NULL", missing_ok=True)) == frames // 2,
             RECORD_TIMEOUT_S, "the exchanges recorded")


def test_headers_and_urls_that_are_not_utf8_are_recorded_losslessly_and_recording_goes_on(tmp_path):
    """By the recorder process, and then (the process killed) by the proxy's own journal thread."""
    db = tmp_path / "http.db"
    with upstream() as url, mcptap_proxy(db, url) as proxy:
        recorder = wait_for(lambda: _children(proxy.proc.pid), RECORD_TIMEOUT_S, "the recorder process")[0]
        _hostile_then_ordinary(proxy, db, 4)
        assert alive(recorder), proxy.errors
        assert "mcptap: warning" not in proxy.errors, proxy.errors  # nothing spooled, no fallback
        os.kill(recorder, signal.SIGKILL)
        # until it is gone, what the proxy hands it may still enter its pipe and die with it (the
        # loss a dying recorder costs, said in the warning); from then on the fallback records
        wait_for(lambda: not alive(recorder), RECORD_TIMEOUT_S, "the recorder to be gone")
        _hostile_then_ordinary(proxy, db, 8)
        assert "recording goes on inside the proxy" in proxy.errors
        assert proxy.stop() == 0, proxy.errors
    assert "Traceback" not in proxy.errors and "cannot" not in proxy.errors.replace("cannot read", ""), proxy.errors
    raws = [r[0] for r in rows(db, "SELECT CAST(raw AS BLOB) FROM frames ORDER BY seq", missing_ok=True)]
    assert raws == [INIT, _answer(INIT), LIST, _answer(LIST)] * 2
    exchanges = rows(db, "SELECT url, request_headers, response_headers FROM exchanges ORDER BY started_at", missing_ok=True)
    for url_cell, request_headers, response_headers in exchanges[::2]:  # the hostile ones
        assert url_cell.endswith("/mcp?q=%FF")  # the byte, percent-encoded
        for stored in (request_headers, response_headers):
            pairs = {name: value.encode("utf-8", "surrogateescape") for name, value in json.loads(stored)}
            assert pairs["X-Name"] == OBS_TEXT  # the exact bytes back from the JSON


def test_a_row_the_store_refuses_is_said_in_one_line_and_the_recording_stays_in_the_database(tmp_path):
    """A value SQLite cannot take (an integer past 64 bits) in one exchange row: that row is said
    and left out, its batch's frames and every later batch are stored, nothing raises."""
    db = tmp_path / "sink.db"
    said: list[str] = []
    sink = Sink(str(db), warn=said.append)
    session = {"id": "s", "transport": "http", "started_at": 1.0}
    sink.write([SessionOp(session), FrameOp(store.http_frame_row("s", 0, 1.0, "c2s", INIT, "x1", None)),
                ExchangeOp({"id": "x1", "session_id": "s", "method": "POST", "status": 2 ** 70})])
    sink.write([FrameOp(store.http_frame_row("s", 0, 2.0, "s2c", ANSWER, "x1", None))])
    sink.close()
    assert len(said) == 1 and "exchange" in said[0] and "\n" not in said[0], said
    assert [r[0] for r in rows(db, "SELECT CAST(raw AS BLOB) FROM frames ORDER BY seq", missing_ok=True)] == [INIT, ANSWER]
    assert not list(tmp_path.glob("*.spool.jsonl"))


# -- crafted mitmproxy dumps -------------------------------------------------------------------------


def _flows() -> list:
    """An initialize POST with its JSON answer, a POST answered by SSE, a GET stream cut by an error."""
    init = tflow.tflow(resp=True)
    init.request.method, init.request.path, init.request.content = "POST", "/mcp", INIT
    init.request.headers["content-type"] = "application/json"
    init.response.headers.clear()
    init.response.headers["content-type"] = "application/json"
    init.response.headers["mcp-session-id"] = "s1"
    init.response.content = ANSWER
    listing = tflow.tflow(resp=True)
    listing.request.method, listing.request.path, listing.request.content = "POST", "/mcp", LIST
    listing.request.headers["mcp-session-id"] = "s1"
    listing.response.headers.clear()
    listing.response.headers["content-type"] = "text/event-stream"
    listing.response.content = b"data: " + _answer(LIST) + b"\n\n"
    stream = tflow.tflow(err=True)
    stream.request.method, stream.request.path = "GET", "/mcp"
    stream.request.headers["accept"] = "text/event-stream"
    return [init, listing, stream]


# the wrong types a crafted field holds: too large for SQLite, a list for text, not finite, not
# UTF-8, nothing, text for bytes, an object
WRONG = {"2**70": 2 ** 70, "a list": ["x"], "inf": math.inf, "nan": math.nan, "not UTF-8": b"caf\xe9",
         "None": None, "text": "text", "an object": {}}
MISSING = object()


def _thawed(state):
    """A flow's state with its tuples as lists (what a tnetstring holds anyway), to change in place."""
    if isinstance(state, (list, tuple)):
        return [_thawed(x) for x in state]
    if isinstance(state, dict):
        return {k: _thawed(v) for k, v in state.items()}
    return state


def _paths(state, path=()):
    """Every field of a state, inner ones first, by its keys and indexes."""
    if isinstance(state, dict):
        for key, value in state.items():
            yield from _paths(value, path + (key,))
    elif isinstance(state, list):
        for n, value in enumerate(state):
            yield from _paths(value, path + (n,))
    if path:
        yield path


def _changed(state, path, value):
    state = copy.deepcopy(state)
    where = state
    for step in path[:-1]:
        where = where[step]
    if value is MISSING:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return state


# the first flow: every field (of the server connection, itself only); the others: the fields
# only they give another shape (an SSE answer, an error instead of an answer)
OWN_FIELDS = (None, ("response",), ("error",))


def crafted_dumps() -> dict[str, bytes]:
    """Each field of each flow with each wrong type, and missing: one dump each, written with
    mitmproxy's own tnetstring writer (mitmproxy.io)."""
    dumps = {}
    for n, f in enumerate(_flows()):
        state = _thawed(f.get_state())
        for path in _paths(state):
            if OWN_FIELDS[n] is not None and path[:1] != OWN_FIELDS[n]:
                continue
            if path[:1] == ("server_conn",) and len(path) > 1:
                continue  # never read by mcptap, and typed by mitmproxy's reader as the client's are
            for name, value in [*WRONG.items(), ("missing", MISSING)]:
                buffer = io.BytesIO()
                tnetstring.dump(_changed(state, path, value), buffer)
                dumps[f"flow {n} {'.'.join(map(str, path))} {name}"] = buffer.getvalue()
    return dumps


def _dump(flows) -> bytes:
    buffer = io.BytesIO()
    writer = mitm_io.FlowWriter(buffer)
    for f in flows:
        writer.add(f)
    return buffer.getvalue()


def _frames(conn) -> int:
    return conn.execute("SELECT count(*) FROM frames").fetchone()[0]


def _import(conn, path: Path, redactor) -> str:
    """'imported' or 'refused' (an MCPTapError: the CLI's one-line error); anything else raises.
    All or nothing: the frames the import says it stored are the frames the file gained."""
    before = _frames(conn)
    try:
        sessions = import_capture(conn, str(path), importer.detect_format(str(path)), new_id=True, redactor=redactor)
    except MCPTapError:
        assert _frames(conn) == before and not conn.in_transaction
        return "refused"
    assert _frames(conn) - before == sum(s.frames for s in sessions)
    return "imported"


def test_every_crafted_field_type_of_a_mitmproxy_dump_is_imported_whole_or_refused(tmp_path):
    conn = store.connect(tmp_path / "crafted.db")
    redactor = FrameRedactor(None)
    path = tmp_path / "crafted.mitm"
    outcomes = {}
    for name, data in crafted_dumps().items():
        path.write_bytes(data)
        outcomes[name] = _import(conn, path, redactor)  # raises on a traceback's exception
    conn.close()
    assert len(outcomes) > 800
    assert "imported" in outcomes.values() and "refused" in outcomes.values()
    assert outcomes["flow 0 request.headers.0.0 not UTF-8"] == "imported"


def test_a_truncated_mitmproxy_dump_is_imported_up_to_a_whole_flow_or_refused(tmp_path):
    data = _dump(_flows())
    conn = store.connect(tmp_path / "cut.db")
    redactor = FrameRedactor(None)
    path = tmp_path / "cut.mitm"
    seen = set()
    for cut in range(1, len(data), max(1, len(data) // 97)):
        path.write_bytes(data[:cut])
        seen.add(_import(conn, path, redactor))
    conn.close()
    assert "refused" in seen


# what crafted dumps give through the command line (each file: one process)
CLI_CASES = {
    "flow 0 client_conn.peername.1 inf": "refused",
    "flow 0 request.headers.0.0 not UTF-8": "imported",
}


def test_crafted_dumps_give_a_one_line_error_or_are_imported_losslessly_through_mcptap_import(tmp_path):
    dumps = crafted_dumps()
    files = {name: tmp_path / f"case{n}.mitm" for n, name in enumerate(CLI_CASES)}
    for name, path in files.items():
        path.write_bytes(dumps[name])

    def imported(name: str):
        return run(mcptap("import", "--db", str(tmp_path / f"{files[name].stem}.db"), str(files[name])))

    with ThreadPoolExecutor(len(files)) as pool:
        results = dict(zip(files, pool.map(imported, files)))
    for name, result in results.items():
        if CLI_CASES[name] == "refused":
            assert_one_line_error(result)
        else:
            assert_clean(result, 0)
    db = tmp_path / f"{files['flow 0 request.headers.0.0 not UTF-8'].stem}.db"
    ((headers,),) = rows(db, "SELECT request_headers FROM exchanges", missing_ok=True)
    names = [name.encode("utf-8", "surrogateescape") for name, _ in json.loads(headers)]
    assert names[0] == b"caf\xe9"  # the header name's exact bytes


def test_a_dump_whose_host_is_no_valid_url_authority_is_imported_with_its_credentials_masked(tmp_path):
    flows = _flows()
    for f in flows:  # an unclosed IPv6 bracket, a password before it: urlsplit raises on both
        f.request.host = "user:s3cret-pw@[::1"
    path = tmp_path / "bracket.mitm"
    path.write_bytes(_dump(flows))
    conn = store.connect(tmp_path / "bracket.db")
    assert _import(conn, path, FrameRedactor(None)) == "imported"
    (upstream,) = {row[0] for row in conn.execute("SELECT upstream FROM sessions")}
    conn.close()
    assert upstream.startswith("http://user:") and upstream.endswith("@[::1:22")  # tflow's port
    assert "s3cret-pw" not in upstream


def test_a_url_that_urlsplit_refuses_still_has_its_token_and_password_masked():
    url, redacted = Redactor(b"k").url("http://u:pw@[::1/mcp?token=tok3n&x=[")
    assert "pw" not in url.replace("mcp", "") and "tok3n" not in url
    assert url.startswith("http://u:") and url.endswith("&x=[")
    assert redacted == ["userinfo", "query:token"]
