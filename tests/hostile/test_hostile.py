"""Hostile input to every reader (`mcptap import`, `analyze`, `show`, `report` and the pandas API
`mcptap.data`): each gives a finding or one line `mcptap: error: ...` with exit status 2,
never a traceback and never a hang (every subprocess runs under HANG_S).

Three tables drive it: frames with hostile content (imported as frame-log JSONL, each into a
database of its own, then read by every reader), hostile files given to `mcptap import`
(frame-log JSONL, mitmproxy dumps written by mitmproxy's own FlowWriter, as `mitmdump -w` does,
and HAR files), and databases that are not mcptap's. The subprocesses of each table run in
parallel in a module fixture; each test then judges one input for one reader. Last, property
tests: the classifier is total and agrees with the kinds table of docs/findings.md section 1
(the SSE parser's property test is in test_sse.py)."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import random
import sqlite3
import subprocess
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mitmproxy import io as mitm_io
from mitmproxy.test import tflow

import mcptap.data as mt
from mcptap.analysis.classify import KINDS, Signature, classify, kind_of, signature
from mcptap.errors import MCPTapError
from mcptap.wire.jsonwire import NumberText, parse
from tests.conftest import frames, mcptap, run

HANG_S = 90  # a reader still running after this long on a one-frame database is hung
WORKERS = max(2, os.cpu_count() or 2)

# -- bugs these tests found, fixed in product code, kept fixed here ---------------------------------
# Lone surrogates in method names, session names and labels reaching SQLite; control characters
# reaching the terminal and matplotlib; frame-logs whose first line is over 64 KiB; unbounded
# integers and time stamps in frame-logs and captures; HAR timings that are not an object; HAR
# statuses beyond SQLite's integers; mitmproxy's reader raising RecursionError and AttributeError;
# infinite latencies; another program's `sessions` and `frames` tables.


# -- helpers -----------------------------------------------------------------------------------

def stderr_lines(result: subprocess.CompletedProcess) -> list[str]:
    return result.stderr.decode("utf-8", "replace").splitlines()


def assert_clean(result: subprocess.CompletedProcess, *statuses: int) -> None:
    """One of `statuses`, and nothing on stderr but mcptap's own one-line messages."""
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    stray = [line for line in err.splitlines() if line and not line.startswith("mcptap: ")]
    assert not stray, err[-3000:]
    assert result.returncode in statuses, (result.returncode, err[-3000:])


def assert_one_line_error(result: subprocess.CompletedProcess) -> None:
    """Exit status 2 and exactly one `mcptap: error: ...` line (warnings before it allowed)."""
    assert_clean(result, 2)
    errors = [line for line in stderr_lines(result) if line.startswith("mcptap: error: ")]
    assert len(errors) == 1, stderr_lines(result)


def mcptap_run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run(mcptap(*args), timeout=HANG_S, cwd=cwd)


def frame_line(session: str, seq: int, ts: float, direction: str, raw: bytes) -> str:
    rec: dict = {"session": session, "seq": seq, "ts": ts, "direction": direction}
    try:
        rec["raw"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        rec["raw_b64"] = base64.b64encode(raw).decode("ascii")
    return json.dumps(rec)


def write_frame_log(path: Path, session: str, raws: list[bytes]) -> Path:
    """A frame-log as mcptap exports it: the session's record first, then its frames (c2s)."""
    lines = [json.dumps({"record": "session", "session": session})]
    lines += [frame_line(session, seq, float(seq), "c2s", raw) for seq, raw in enumerate(raws, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def frame_count(db: Path) -> int:
    """Frames in a database after a refused import (0 if it holds no mcptap tables)."""
    if not db.is_file():
        return 0
    with open(db, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            return 0
    conn = sqlite3.connect(db)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'frames'").fetchone():
            return 0
        return conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    except sqlite3.DatabaseError:
        return 0
    finally:
        conn.close()


def first_session(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id FROM sessions ORDER BY started_at, id").fetchone()[0]
    finally:
        conn.close()


def as_bytes(stored: str | bytes) -> bytes:
    return stored.encode("utf-8") if isinstance(stored, str) else bytes(stored)


def read_every_table(db: Path) -> dict[str, pd.DataFrame]:
    """Every loader of mcptap.data over a database, as a notebook would call them."""
    msgs = mt.messages(db)
    every_frame = mt.frames(db, columns=mt.FRAME_COLUMNS)
    return {"sessions": mt.sessions(db), "frames": every_frame, "messages": msgs, "findings": mt.findings(db),
            "exchanges": mt.exchanges(db), "latency": mt.latency(msgs),
            "parsed": mt.parse(every_frame["raw"]).to_frame()}


# -- 1. frames with hostile content ---------------------------------------------------------------

DEEP = 100_000
DIGITS = b"9" * 10_000


def request(method: bytes = b'"ping"', ident: bytes = b"1", params: bytes | None = None) -> bytes:
    tail = b',"params":' + params if params is not None else b""
    return b'{"jsonrpc":"2.0","id":' + ident + b',"method":' + method + tail + b"}"


# id: (the frame's bytes, its kind, codes that must be among its findings)
HOSTILE_FRAMES: dict[str, tuple[bytes, str, set[str]]] = {
    "array-nested-100000-deep": (b"[" * DEEP + b"]" * DEEP, "batch", {"batch-used", "not-an-object"}),
    "object-nested-100000-deep": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "invalid", {"bad-jsonrpc-version"}),
    "params-nested-100000-deep": (request(b'"tools/call"', params=b'{"x":' + b"[" * DEEP + b"]" * DEEP + b"}"),
                                  "request", set()),
    "nesting-100000-deep-never-closed": (b"[" * DEEP, "unparseable", {"parse-error"}),
    "id-of-10000-digits": (request(ident=DIGITS), "request", set()),
    "param-of-minus-10000-digits": (request(params=b'{"n":-' + DIGITS + b"}"), "request", set()),
    "fraction-of-10000-digits": (request(params=b'{"n":0.' + DIGITS + b"e-99999}"), "request", set()),
    "exponent-beyond-any-float": (request(params=b'{"n":1e999999}'), "request", set()),
    "nan-token": (request(params=b'{"x":NaN}'), "unparseable", {"parse-error"}),
    "infinity-token-as-id": (request(ident=b"Infinity"), "unparseable", {"parse-error"}),
    "minus-infinity-token-as-result": (b'{"jsonrpc":"2.0","id":1,"result":-Infinity}', "unparseable", {"parse-error"}),
    "lone-surrogate-escape-in-id": (request(ident=b'"\\ud800"'), "request", set()),
    "lone-surrogate-escape-in-method": (request(method=b'"\\udfff"'), "request", set()),
    "lone-surrogate-escapes-in-params": (request(params=b'{"\\udbff":"\\udc00\\ud800"}'), "request", set()),
    "nul-escape-in-method": (request(method=b'"a\\u0000b"'), "request", set()),
    "terminal-escapes-in-method": (request(method=b'"\\u001b[2J\\u001b]0;owned\\u0007x"'), "request", set()),
    "terminal-escapes-in-raw-text": (b"\x1b[2J\x1b]0;owned\x07 not json", "unparseable", {"parse-error"}),
    "invalid-utf8-bytes": (request(method=b'"\xff\xfe"'), "unparseable", {"parse-error"}),
    "overlong-utf8-encoding": (request(method=b'"\xc0\xaf"'), "unparseable", {"parse-error"}),
    "utf8-encoded-surrogate": (request(method=b'"\xed\xa0\x80"'), "unparseable", {"parse-error"}),
    "utf8-cut-inside-a-character": (b'{"jsonrpc":"2.0","id":1,"method":"\xe2\x82', "unparseable", {"parse-error"}),
    "raw-nul-byte": (b'{"jsonrpc":"2.0","id":1,\x00"method":"ping"}', "unparseable", {"parse-error"}),
    "empty-frame": (b"", "unparseable", {"parse-error"}),
}

def _frame_pipeline(folder: Path, name: str) -> dict:
    """Import one hostile frame into a database of its own, then run every reader over it."""
    folder.mkdir(parents=True)
    db = folder / "hostile.db"
    log = write_frame_log(folder / "hostile.jsonl", "h", [HOSTILE_FRAMES[name][0]])
    out = {"db": db, "import": mcptap_run("import", "--db", str(db), str(log), cwd=folder)}
    out["analyze"] = mcptap_run("analyze", "--db", str(db), "--format", "json", cwd=folder)
    out["table"] = mcptap_run("analyze", "--db", str(db), cwd=folder)
    out["show --full"] = mcptap_run("show", "--db", str(db), "h", "--full", cwd=folder)
    out["report"] = mcptap_run("report", "--db", str(db), "-o", str(folder / "report.html"), cwd=folder)
    out["html"] = folder / "report.html"
    return out


@pytest.fixture(scope="module")
def hostile_frames(started) -> dict[str, Future]:
    return started["frames"]


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
def test_import_stores_a_hostile_frame_as_its_exact_bytes(hostile_frames, name):
    runs = hostile_frames[name].result()
    assert_clean(runs["import"], 0)
    assert frames(runs["db"]) == [HOSTILE_FRAMES[name][0]]


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
def test_analyze_gives_a_hostile_frame_its_finding_without_a_traceback(hostile_frames, name):
    runs = hostile_frames[name].result()
    _, kind, codes = HOSTILE_FRAMES[name]
    assert_clean(runs["analyze"], 0, 1)
    report = json.loads(runs["analyze"].stdout)
    assert [s["kinds"] for s in report["sessions"]] == [{kind: 1}]
    found = {f["code"] for f in report["findings"] if f["frame"] == 1}
    assert codes <= found, found
    assert ("parse-error" in found) == (kind == "unparseable"), found
    assert_clean(runs["table"], 0, 1)
    assert runs["table"].returncode == runs["analyze"].returncode


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
def test_show_prints_a_hostile_frame_without_a_traceback(hostile_frames, name):
    runs = hostile_frames[name].result()
    kind = HOSTILE_FRAMES[name][1]
    assert_clean(runs["show --full"], 0)
    transcript = runs["show --full"].stdout.decode("utf-8")
    assert transcript.startswith("session h") and kind in transcript, transcript[:500]


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
def test_report_writes_a_page_for_a_hostile_frame_without_a_traceback(hostile_frames, name):
    runs = hostile_frames[name].result()
    assert_clean(runs["report"], 0)
    page = runs["html"].read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and page.rstrip().endswith("</html>")


@pytest.mark.parametrize("name", HOSTILE_FRAMES)
def test_the_pandas_api_reads_a_hostile_frame_back_without_raising(hostile_frames, name):
    runs = hostile_frames[name].result()
    raw, kind, codes = HOSTILE_FRAMES[name]
    tables = read_every_table(runs["db"])
    assert len(tables["sessions"]) == 1
    assert [as_bytes(r) for r in tables["frames"]["raw"]] == [raw]
    assert as_bytes(mt.raw(runs["db"], "h", 1)) == raw
    messages = tables["messages"]
    assert list(messages.loc[messages["idx"].isna(), "kind"]) == [kind]
    assert codes <= set(tables["findings"]["code"])
    if kind == "unparseable":
        with pytest.raises(ValueError):
            mt.value(runs["db"], "h", 1)
    else:
        assert mt.value(runs["db"], "h", 1) is not None


@pytest.mark.parametrize("name", ["terminal-escapes-in-method", "terminal-escapes-in-raw-text", "nul-escape-in-method"])
def test_control_characters_from_the_traffic_never_reach_the_terminal(hostile_frames, name):
    runs = hostile_frames[name].result()
    for how in ("table", "show --full"):
        assert runs[how].returncode in (0, 1), stderr_lines(runs[how])
        text = runs[how].stdout.decode("utf-8", "replace")
        control = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F})
        assert not control, (how, control)


def test_one_session_of_every_hostile_frame_is_analysed_shown_and_reported(tmp_path):
    db = tmp_path / "all.db"
    log = write_frame_log(tmp_path / "all.jsonl", "all", [raw for raw, _, _ in HOSTILE_FRAMES.values()])
    assert_clean(mcptap_run("import", "--db", str(db), str(log), cwd=tmp_path), 0)
    analyze = mcptap_run("analyze", "--db", str(db), "--format", "json", cwd=tmp_path)
    assert_clean(analyze, 0, 1)
    expected: dict[str, int] = {}
    for _, kind, _ in HOSTILE_FRAMES.values():
        expected[kind] = expected.get(kind, 0) + 1
    assert json.loads(analyze.stdout)["sessions"][0]["kinds"] == expected
    assert_clean(mcptap_run("show", "--db", str(db), "all", "--full", cwd=tmp_path), 0)
    assert_clean(mcptap_run("report", "--db", str(db), "-o", str(tmp_path / "all.html"), cwd=tmp_path), 0)
    assert len(read_every_table(db)["messages"]) >= len(HOSTILE_FRAMES)


def test_a_frame_log_whose_first_frame_is_longer_than_64_kib_is_still_a_frame_log(tmp_path):
    raw = HOSTILE_FRAMES["array-nested-100000-deep"][0]
    log = tmp_path / "big-first.jsonl"
    log.write_text(frame_line("big", 1, 1.0, "c2s", raw) + "\n", encoding="utf-8")
    assert_clean(mcptap_run("import", "--db", str(tmp_path / "x.db"), str(log), cwd=tmp_path), 0)
    assert frames(tmp_path / "x.db") == [raw]


# -- 2. hostile files given to `mcptap import` ----------------------------------------------------

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
PONG = b'{"jsonrpc":"2.0","id":1,"result":{}}'
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
INIT_RESULT = (b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
               b'"serverInfo":{"name":"s","version":"1"}}}')


def _frame_log_with(second: str) -> Callable[[Path], Path]:
    """A frame-log whose first line is a good frame and whose second is `second` (text)."""
    def build(path: Path) -> Path:
        first = frame_line("s", 1, 1.0, "c2s", PING)
        path.write_bytes(first.encode() + b"\n" + second.encode("utf-8", "surrogatepass") + b"\n")
        return path
    return build


def _frame(**members) -> str:
    rec = {"session": "s", "seq": 2, "ts": 2.0, "direction": "s2c", "raw": PONG.decode()}
    rec.update(members)
    return json.dumps({k: v for k, v in rec.items() if v is not None})


def _times(first: str, second: str) -> Callable[[Path], Path]:
    """A request at ts `first` answered at ts `second` (JSON number texts)."""
    def build(path: Path) -> Path:
        lines = [json.dumps({"session": "s", "seq": 1, "ts": 0, "direction": "c2s", "raw": PING.decode()}).replace(
                     '"ts": 0', f'"ts": {first}'),
                 json.dumps({"session": "s", "seq": 2, "ts": 0, "direction": "s2c", "raw": PONG.decode()}).replace(
                     '"ts": 0', f'"ts": {second}')]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path
    return build


def _bytes(data: bytes) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        path.write_bytes(data)
        return path
    return build


def _post(body: bytes, answer: bytes = INIT_RESULT):
    f = tflow.tflow(resp=True)
    f.request.method, f.request.path, f.request.content = "POST", "/mcp", body
    f.request.headers["content-type"] = "application/json"
    f.request.headers["accept"] = "application/json, text/event-stream"
    f.response.headers.clear()
    f.response.headers["content-type"] = "application/json"
    f.response.headers["mcp-session-id"] = "abc"
    f.response.content = answer
    return f


def _dump(flows) -> bytes:
    """A mitmproxy dump, written the way `mitmdump -w` writes one (mitmproxy.io.FlowWriter)."""
    buffer = io.BytesIO()
    writer = mitm_io.FlowWriter(buffer)
    for f in flows:
        writer.add(f)
    return buffer.getvalue()


def _mitm(keep: Callable[[int], int] | None = None, *, bodies=(INIT,),
          infinite_end: bool = False) -> Callable[[Path], Path]:
    """A dump of POSTs of `bodies`; `keep(size)` bytes of it when it is cut."""
    def build(path: Path) -> Path:
        flows = [_post(body, INIT_RESULT if body is INIT else PONG) for body in bodies]
        if infinite_end:
            flows[0].response.timestamp_end = math.inf
        data = _dump(flows)
        path.write_bytes(data[:keep(len(data))] if keep else data)
        return path
    return build


def _deep_tnetstring(path: Path) -> Path:
    """Lists in lists, DEEP levels, each a valid tnetstring (`<length>:<items>]`)."""
    prefixes, size = [], 3  # the innermost: b"0:]"
    for _ in range(DEEP):
        prefixes.append(b"%d:" % size)
        size += len(prefixes[-1]) + 1
    path.write_bytes(b"".join(reversed(prefixes)) + b"0:]" + b"]" * DEEP)
    return path


def _har_entry(body: str = INIT.decode(), answer: str = INIT_RESULT.decode()) -> dict:
    return {"startedDateTime": "2026-11-30T10:00:00.000Z", "time": 12.5,
            "request": {"method": "POST", "url": "http://127.0.0.1:8000/mcp", "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "content-type", "value": "application/json"},
                                    {"name": "accept", "value": "application/json, text/event-stream"}],
                        "postData": {"mimeType": "application/json", "text": body}},
            "response": {"status": 200, "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "content-type", "value": "application/json"},
                                     {"name": "mcp-session-id", "value": "abc"}],
                         "content": {"mimeType": "application/json", "text": answer}},
            "timings": {"send": 1, "wait": 10, "receive": 1.5}}


def _har(change=None, *, text: str | None = None, cut: int | None = None) -> Callable[[Path], Path]:
    """A HAR export of one MCP exchange, changed by `change(har)`, or given as `text`."""
    def build(path: Path) -> Path:
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
        else:
            har = {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [_har_entry()]}}
            if change is not None:
                change(har)
            data = json.dumps(har).encode()  # NaN and Infinity are written as those tokens
        path.write_bytes(data[:cut] if cut else data)
        return path
    return build


def _entry(**members):
    return lambda har: har["log"]["entries"][0].update(members)


def _request(**members):
    return lambda har: har["log"]["entries"][0]["request"].update(members)


def _sqlite_file(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    return path


# id: (how to write it, "refused" | "imported" | "either")
HOSTILE_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "frame-log-line-nested-100000-deep": (_frame_log_with(
        '{"session":"s","ts":2,"direction":"s2c","raw":"{}","x":' + "[" * DEEP + "]" * DEEP + "}"), "refused"),
    "frame-log-ts-nan": (_frame_log_with(_frame().replace('"ts": 2.0', '"ts": NaN')), "refused"),
    "frame-log-ts-infinity": (_frame_log_with(_frame().replace('"ts": 2.0', '"ts": Infinity')), "refused"),
    "frame-log-ts-of-10000-digits": (_frame_log_with(_frame().replace('"ts": 2.0', '"ts": ' + "9" * 10_000)),
                                     "refused"),
    "frame-log-ts-of-400-digits": (_frame_log_with(_frame().replace('"ts": 2.0', '"ts": 1' + "0" * 400)), "refused"),
    "frame-log-ts-1e400": (_frame_log_with(_frame().replace('"ts": 2.0', '"ts": 1e400')), "refused"),
    "frame-log-seq-2-to-the-63": (_frame_log_with(_frame(seq=2 ** 63)), "refused"),
    "frame-log-session-a-lone-surrogate": (_frame_log_with(_frame(session="\ud800")), "either"),
    "frame-log-label-a-lone-surrogate": (_frame_log_with(
        json.dumps({"record": "session", "session": "s", "label": "\udc80"})), "either"),
    "frame-log-exit-status-2-to-the-70": (_frame_log_with(
        json.dumps({"record": "session", "session": "s", "exit_status": 2 ** 70})), "either"),
    "frame-log-started-at-of-400-digits": (_frame_log_with(
        '{"record":"session","session":"s","started_at":1' + "0" * 400 + "}"), "refused"),
    "frame-log-ended-at-a-string": (_frame_log_with(
        json.dumps({"record": "session", "session": "s", "ended_at": "yesterday"})), "either"),
    "frame-log-raw-a-number": (_frame_log_with(_frame(raw=5)), "refused"),
    "frame-log-raw-b64-not-base64": (_frame_log_with(_frame(raw=None, raw_b64="!!!")), "refused"),
    "frame-log-direction-a-number": (_frame_log_with(_frame(direction=1)), "refused"),
    "frame-log-invalid-utf8-in-a-line": (_bytes(frame_line("s", 1, 1.0, "c2s", PING).encode() + b"\n"
                                                + _frame().encode().replace(b'"s"', b'"\xff"') + b"\n"), "refused"),
    "frame-log-raw-a-lone-surrogate": (_frame_log_with(_frame(raw="\ud800")), "imported"),
    "frame-log-last-line-cut-off": (_bytes(frame_line("s", 1, 1.0, "c2s", PING).encode() + b"\n"
                                           + _frame().encode()[:30]), "imported"),
    "frame-log-ts-year-33658": (_times("1e12", "1e12"), "either"),
    "frame-log-ts-1e300": (_times("1e300", "1e300"), "either"),
    "frame-log-ts-minus-and-plus-1.7e308": (_times("-1.7e308", "1.7e308"), "either"),
    "mitmproxy-dump": (_mitm(), "imported"),
    "mitmproxy-dump-cut-in-the-middle": (_mitm(lambda size: size // 2, bodies=(INIT, PING, PING)), "refused"),
    "mitmproxy-dump-one-byte-short": (_mitm(lambda size: size - 1, bodies=(INIT, PING, PING)), "refused"),
    "mitmproxy-dump-with-hostile-bodies": (_mitm(bodies=(
        INIT, HOSTILE_FRAMES["params-nested-100000-deep"][0], HOSTILE_FRAMES["invalid-utf8-bytes"][0],
        HOSTILE_FRAMES["nan-token"][0], HOSTILE_FRAMES["id-of-10000-digits"][0],
        HOSTILE_FRAMES["lone-surrogate-escape-in-id"][0])), "imported"),
    "mitmproxy-dump-with-an-infinite-timestamp": (_mitm(bodies=(PING,), infinite_end=True), "refused"),
    "mitmproxy-dump-nested-100000-deep": (_deep_tnetstring, "refused"),
    "mitmproxy-dump-of-a-string": (_bytes(b"5:hello,"), "refused"),
    "har": (_har(), "imported"),
    "har-entries-an-object": (_har(lambda h: h["log"].update(entries={"a": 1})), "refused"),
    "har-entries-a-string": (_har(lambda h: h["log"].update(entries="x")), "refused"),
    "har-entry-a-number": (_har(lambda h: h["log"]["entries"].__setitem__(0, 5)), "refused"),
    "har-post-data-text-a-number": (_har(_request(postData={"mimeType": "application/json", "text": 5})),
                                    "refused"),
    "har-headers-an-object": (_har(_request(headers={"content-type": "application/json"})), "either"),
    "har-time-a-string": (_har(_entry(time="12")), "refused"),
    "har-status-10-to-the-30": (_har(lambda h: h["log"]["entries"][0]["response"].update(status=10 ** 30)),
                                "either"),
    "har-status-of-10000-digits": (_har(text='{"log":{"entries":[{"response":{"status":' + "9" * 10_000 + "}}]}}"),
                                   "refused"),
    "har-timings-strings": (_har(_entry(timings={"send": "1", "wait": "x", "receive": "1.5"})), "imported"),
    "har-timings-a-string": (_har(_entry(timings="fast")), "either"),
    "har-timings-a-list": (_har(_entry(timings=[1, 2])), "either"),
    "har-timings-infinity-and-nan": (_har(_entry(timings={"send": math.nan, "wait": math.inf, "receive": 1})),
                                     "imported"),
    "har-entries-nan": (_har(text='{"log": {"entries": NaN}}'), "refused"),
    "har-nested-100000-deep": (_har(text='{"log": ' + "[" * DEEP + "]" * DEEP + "}"), "refused"),
    "har-cut-in-the-middle": (_har(cut=300), "refused"),
    "har-with-invalid-utf8": (_bytes(b'{"log": {"entries": [], "creator": "\xff\xfe"}}'), "refused"),
    "har-with-a-lone-surrogate-body": (_har(_request(postData={"mimeType": "application/json",
                                                               "text": '{"jsonrpc":"2.0","id":1,"method":"\ud800"}'})),
                                       "either"),
    "empty-file": (_bytes(b""), "refused"),
    "only-nul-bytes": (_bytes(b"\x00" * 4096), "refused"),
    "random-bytes": (_bytes(random.Random(7).randbytes(4096)), "refused"),
    "an-sqlite-database": (_sqlite_file, "refused"),
}

FILE_READER_BUGS: dict = {}


def _file_pipeline(folder: Path, name: str) -> dict:
    """Import one hostile file; when it went in, run every reader over what it brought."""
    folder.mkdir(parents=True)
    db = folder / "import.db"
    path = HOSTILE_FILES[name][0](folder / f"{name}.input")
    out = {"db": db, "import": mcptap_run("import", "--db", str(db), str(path), cwd=folder)}
    if out["import"].returncode == 0 and frame_count(db):
        sid = out["session"] = first_session(db)
        out["analyze"] = mcptap_run("analyze", "--db", str(db), "--format", "json", cwd=folder)
        out["show"] = mcptap_run("show", "--db", str(db), sid, "--full", cwd=folder)
        out["report"] = mcptap_run("report", "--db", str(db), "-o", str(folder / "report.html"), cwd=folder)
    return out


@pytest.fixture(scope="module")
def hostile_files(started) -> dict[str, Future]:
    return started["files"]


@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_hostile_file_is_imported_whole_or_refused_in_one_line(hostile_files, name):
    runs = hostile_files[name].result()
    outcome = HOSTILE_FILES[name][1]
    result = runs["import"]
    if outcome == "refused" or (outcome == "either" and result.returncode != 0):
        assert_one_line_error(result)
        assert frame_count(runs["db"]) == 0  # each file all or nothing
    else:
        assert_clean(result, 0)
        assert frame_count(runs["db"]) > 0


MAY_BE_IMPORTED = [n for n, (_, outcome) in HOSTILE_FILES.items() if outcome != "refused"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=[FILE_READER_BUGS[n]] if n in FILE_READER_BUGS else [])
                                  for n in MAY_BE_IMPORTED])
def test_every_reader_takes_what_a_hostile_file_brought_in(hostile_files, name):
    runs = hostile_files[name].result()
    if HOSTILE_FILES[name][1] == "either" and runs["import"].returncode == 2:
        pytest.skip("refused at import: nothing to read")
    assert_clean(runs["import"], 0)
    assert "analyze" in runs, "the import stored no frame"
    assert_clean(runs["analyze"], 0, 1)
    assert json.loads(runs["analyze"].stdout)["sessions"]
    for how in ("show", "report"):
        assert_clean(runs[how], 0)
    tables = read_every_table(runs["db"])
    assert len(tables["frames"]) == frame_count(runs["db"])


def test_a_frame_log_raw_with_a_lone_surrogate_is_a_parse_error_not_a_crash(hostile_files):
    runs = hostile_files["frame-log-raw-a-lone-surrogate"].result()
    assert_clean(runs["analyze"], 1)
    report = json.loads(runs["analyze"].stdout)
    assert {(f["frame"], f["code"]) for f in report["findings"]} >= {(2, "parse-error")}


def test_a_hostile_dump_body_is_stored_byte_for_byte(hostile_files):
    runs = hostile_files["mitmproxy-dump-with-hostile-bodies"].result()
    stored = frames(runs["db"], "c2s")
    for body in (HOSTILE_FRAMES["params-nested-100000-deep"][0], HOSTILE_FRAMES["invalid-utf8-bytes"][0],
                 HOSTILE_FRAMES["nan-token"][0], HOSTILE_FRAMES["id-of-10000-digits"][0]):
        assert body in stored


# -- 3. databases that are not mcptap's ----------------------------------------------------------

def _other_program(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'ada')")
    conn.commit()
    conn.close()


def _same_table_names(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (name TEXT, value BLOB)")
    conn.execute("CREATE TABLE frames (x, y)")
    conn.execute("INSERT INTO sessions VALUES ('s', x'00')")
    conn.execute("INSERT INTO frames VALUES (1, 2)")
    conn.commit()
    conn.close()


def _cut_in_half(path: Path) -> None:
    _other_program(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2 + 100])


FOREIGN_DATABASES = {
    "sqlite-of-another-program": _other_program,
    "sqlite-with-tables-named-sessions-and-frames": _same_table_names,
    "not-sqlite": lambda p: p.write_bytes(b"hello, this is not a database\n" * 10),
    "empty-file": lambda p: p.write_bytes(b""),
    "sqlite-header-then-garbage": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000),
    "sqlite-cut-in-half": _cut_in_half,
    "a-directory": lambda p: p.mkdir(),
}
READERS = {
    "analyze": ("analyze", "--format", "json"),
    "show": ("show", "s"),
    "report": ("report", "-o", "report.html"),
}


def _foreign_run(folder: Path, database: str, args: tuple[str, ...]) -> dict:
    folder.mkdir(parents=True)
    db = folder / "foreign.db"
    FOREIGN_DATABASES[database](db)
    return {"db": db, "run": mcptap_run(*args, "--db", str(db), cwd=folder)}


@pytest.fixture(scope="module")
def foreign_databases(started) -> dict[tuple[str, str], Future]:
    return started["foreign"]


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> dict[str, dict]:
    """Every subprocess of the three tables, started at once on WORKERS threads (the longest
    first); each test waits for the one future it judges."""
    root = tmp_path_factory.mktemp("hostile")
    log = write_frame_log(root / "good.jsonl", "good", [PING])
    pool = ThreadPoolExecutor(WORKERS)
    frames_ = {name: pool.submit(_frame_pipeline, root / "frames" / name, name) for name in HOSTILE_FRAMES}
    files = {name: pool.submit(_file_pipeline, root / "files" / name, name) for name in HOSTILE_FILES}
    jobs = {(database, reader): args for database in FOREIGN_DATABASES for reader, args in READERS.items()}
    jobs.update({(database, "import"): ("import", str(log)) for database in FOREIGN_DATABASES})
    foreign = {key: pool.submit(_foreign_run, root / "foreign" / f"{n}", key[0], args)
               for n, (key, args) in enumerate(jobs.items())}
    yield {"frames": frames_, "files": files, "foreign": foreign}
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("database", FOREIGN_DATABASES)
def test_a_database_that_is_not_mcptaps_is_refused_in_one_line(foreign_databases, database, reader):
    assert_one_line_error(foreign_databases[(database, reader)].result()["run"])


@pytest.mark.parametrize("database", FOREIGN_DATABASES)
def test_import_into_a_database_that_is_not_mcptaps_is_refused_or_leaves_its_tables_alone(foreign_databases,
                                                                                           database):
    out = foreign_databases[(database, "import")].result()
    result, db = out["run"], out["db"]
    if result.returncode != 0:
        assert_one_line_error(result)
        return
    assert_clean(result, 0)
    assert frames(db) == [PING]
    if database == "sqlite-of-another-program":
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT * FROM users").fetchall() == [(1, "ada")]
        finally:
            conn.close()


@pytest.mark.parametrize("database", FOREIGN_DATABASES)
def test_the_pandas_api_refuses_a_database_that_is_not_mcptaps_with_a_named_error(tmp_path, database):
    db = tmp_path / "foreign.db"
    FOREIGN_DATABASES[database](db)
    for load in (mt.sessions, mt.frames, mt.messages, mt.findings, mt.exchanges):
        with pytest.raises(MCPTapError):
            load(db)


# -- 4. the classifier: total, and the kinds table of docs/findings.md section 1 ------------------

def _valid_id(value) -> bool:
    """String, Number or Null (a Boolean is not a Number here)."""
    return value is None or type(value) in (str, int, float, NumberText)


def _error_object(value) -> bool:
    if type(value) is not dict:
        return False
    code = value.get("code")
    integer = type(code) is int or (type(code) is NumberText and not any(c in code.text for c in ".eE"))
    return integer and type(value.get("message")) is str


def expected_kind(value) -> str:
    """The kinds table, read literally (a batch is judged element by element, outside classify)."""
    if type(value) is not dict or type(value.get("jsonrpc")) is not str or value["jsonrpc"] != "2.0":
        return "invalid"
    if "method" in value:
        if type(value["method"]) is not str:
            return "invalid"
        if "id" not in value:
            return "notification"  # whatever its params: it gets no response
        if not _valid_id(value["id"]) or ("params" in value and type(value["params"]) not in (dict, list)):
            return "invalid"
        return "request"
    if "id" not in value or not _valid_id(value["id"]):
        return "invalid"
    if "result" in value and "error" not in value:
        return "response"
    if "error" in value and "result" not in value and _error_object(value["error"]):
        return "error"
    return "invalid"


ANY_CHARACTER = st.characters(codec=None, exclude_categories=())  # lone surrogates included
numbers = st.one_of(
    st.integers(), st.integers(min_value=10 ** 30, max_value=10 ** 40), st.floats(),
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,5})?([eE][-+]?[0-9]{1,4})?\Z").map(NumberText),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(ANY_CHARACTER, max_size=5),
                    st.sampled_from(["2.0", "ping", "tools/call", "1", "", "2"]))
json_like = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(ANY_CHARACTER, max_size=3), inner, max_size=3), max_leaves=8)
envelope_value = st.one_of(json_like, st.fixed_dictionaries(
    {"code": st.one_of(st.integers(-32800, 0), numbers, scalars), "message": st.one_of(st.text(max_size=3), scalars)},
    optional={"data": json_like}))
ABSENT = object()


def member(*likely, other=envelope_value):
    """A member's value: one of `likely` most of the time, else absent or any value."""
    return st.one_of(st.sampled_from(likely), st.sampled_from(likely), st.just(ABSENT), other)


envelopes = st.fixed_dictionaries({
    "jsonrpc": member("2.0", "2.0", "1.0"),
    "method": member("ping", "tools/call", "", ABSENT),
    "id": member(0, -1, "", "7", None, True, False, 1.0, 1.5, NumberText("1e0"), NumberText("9" * 5000), [], {}),
    "params": member({}, [], None, 1, "x", True),
    "result": member({}, None, ABSENT, ABSENT),
    "error": member({"code": -32601, "message": "m"}, {"code": 1.0, "message": "m"}, {"code": True, "message": "m"},
                    {"code": 1}, [], ABSENT, ABSENT),
    "extra": member(ABSENT),
}).map(lambda members: {k: v for k, v in members.items() if v is not ABSENT})


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(envelopes, envelopes, json_like))
@example({"jsonrpc": "2.0", "method": "ping", "id": True})  # a Boolean is not a Number
@example({"jsonrpc": "2.0", "method": "notifications/x", "params": 5})  # still a notification
@example({"jsonrpc": "2.0", "id": 1, "error": {"code": 1.0, "message": "m"}})  # not an integer code
@example({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}})
@example({"jsonrpc": 2.0, "id": 1, "result": {}})
@example({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"})
def test_the_classifier_is_total_and_agrees_with_the_kinds_table(value):
    sig, kind = classify(value)
    assert isinstance(sig, Signature) and kind in KINDS
    assert kind == expected_kind(value)
    assert kind_of(signature(value)) == kind


wire_members = st.fixed_dictionaries({
    "jsonrpc": st.sampled_from(['"2.0"', '"2.0"', '"1.0"', "2.0", "null", None]),
    "method": st.sampled_from(['"ping"', '"\\ud800"', "1", "null", "[]", None, None]),
    "id": st.sampled_from(["0", "-1", "1.0", "1e0", "1.5", "9" * 5000, '"7"', '"\\udc00"', "null", "true", "{}", "[]",
                           None]),
    "params": st.sampled_from(["{}", "[]", "1", '"x"', "null", None, None]),
    "result": st.sampled_from(["{}", "null", "0", None, None]),
    "error": st.sampled_from(['{"code":-32601,"message":"m"}', '{"code":1.0,"message":"m"}', '{"code":1e2,"message":"m"}',
                              '{"code":' + "9" * 5000 + ',"message":"m"}', '{"code":true,"message":"m"}',
                              '{"code":1}', "[]", "null", None, None, None]),
})


@settings(max_examples=300, deadline=None)
@given(wire_members)
def test_a_frame_as_the_wire_wrote_it_is_classified_by_the_kinds_table(members):
    text = "{" + ",".join(f'"{k}":{v}' for k, v in members.items() if v is not None) + "}"
    parsed = parse(text)
    assert parsed.error is None, text
    assert classify(parsed.value)[1] == expected_kind(parsed.value), text
