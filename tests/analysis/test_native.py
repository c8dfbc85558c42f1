"""The native part of `mcptap analyze` (setup.py): the envelope scanner (analyzer/_wirescan.c), a
pure function of a frame's bytes, must agree with the exact parser to the byte, and the session's
fast path that reads it with the exact path.

Every analysis in tests/support/sessions.py already runs both ways (exact, fast) and compares;
here the same is asked of generated frames and sessions, including broken ones. Then the analysis
rows written while other connections write."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.analysis import mcp, session
from mcptap.wire import jsonwire
from mcptap.analysis.classify import classify
from mcptap.wire.jsonwire import NumberText
from mcptap.analysis.session import id_key
from tests.support.sessions import analyze

_wirescan = pytest.importorskip("mcptap._wirescan", reason="the C extension was not built (no C compiler?)")


def test_the_native_scanner_is_built_and_in_use():
    assert session._wirescan is _wirescan, "mcptap._wirescan was built for other _meta names"
    assert _wirescan.META_NAMES == (mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES, mcp.META_LOG_LEVEL)
    assert _wirescan.ENVELOPE_ITEMS == session.ENVELOPE_ITEMS, (
        "mcptap._wirescan was built from older sources: rebuild it (pip install -e . --no-deps)")


# -- the scanner against the exact parser ----------------------------------------------------

names = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "_meta", "progressToken",
                         "progress", "resultType", "code", "message", "requestId", mcp.META_PROTOCOL_VERSION,
                         mcp.META_CLIENT_CAPABILITIES, mcp.META_LOG_LEVEL, "x", "é", "a\u2028b"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=8), st.sampled_from(["2.0", "complete", "input_required", "tools/call",
                                                          "notifications/progress", "\ud800", "\"\\"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(names, inner, max_size=5)), max_leaves=12)
envelopes = st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2])}, optional={
    "id": st.one_of(st.integers(-2**65, 2**65), st.text(max_size=6), st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    "method": st.sampled_from(["tools/call", "notifications/progress", "notifications/cancelled", "ping", "x/é"]),
    "params": st.one_of(values, st.dictionaries(names, values, max_size=4)),
    "result": st.one_of(values, st.dictionaries(names, values, max_size=4)),
    "error": st.one_of(values, st.fixed_dictionaries({"code": st.integers(-2**70, 2**70), "message": st.text(max_size=4)})),
})


def _text(value, ensure_ascii, spaced) -> bytes:
    return json.dumps(value, ensure_ascii=ensure_ascii, separators=(", ", ": ") if spaced else (",", ":")).encode(
        "utf-8", "surrogatepass")


def _mutate(raw: bytes, edits) -> bytes:
    for at, what in edits:
        at %= len(raw) + 1
        raw = raw[:at] + what + raw[at + 1:] if what else raw[:at] + raw[at + 1:]
    return raw


META_MEMBERS = ("progressToken", mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES, mcp.META_LOG_LEVEL)


def _read_of(meta):
    """What the scanner gives of params._meta: the members the session core reads, those present,
    in META_MEMBERS order (None when _meta is not an object)."""
    return {k: meta[k] for k in META_MEMBERS if k in meta} if type(meta) is dict else None


def _same(a, b) -> bool:
    """Equal as the session core reads them: numbers with a fraction by their id_key."""
    if type(a) in (float, NumberText) or type(b) in (float, NumberText):
        return type(a) in (float, NumberText) and type(b) in (float, NumberText) and id_key(a) == id_key(b)
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelope=envelopes, ensure_ascii=st.booleans(), spaced=st.booleans(),
       edits=st.lists(st.tuples(st.integers(0, 400), st.sampled_from([b"", b"\\", b'"', b"\xff", b"\xed\xa0\x80",
                                                                     b"{", b"}", b",", b"1", b"\x01", b"e"])),
                      max_size=2))
def test_the_scanner_reads_what_the_exact_parser_reads_or_leaves_the_frame_to_it(envelope, ensure_ascii, spaced, edits):
    raw = _mutate(_text(envelope, ensure_ascii, spaced), edits)
    found = _wirescan.scan(raw)
    parsed = jsonwire.parse(raw)
    if found is None:
        return
    assert parsed.error is None and not parsed.duplicate_keys and type(parsed.value) is dict, raw
    value = parsed.value
    key, method, ident, id_text, meta, params, result_type, ident_key, member = found
    sig, _ = classify(value)
    assert key == tuple(sig)[1:], raw
    assert method == value.get("method", None), raw
    if "id" in value:
        assert type(ident) is type(value["id"]) and ident == value["id"], raw
        assert id_text == (str(ident) if type(ident) is int else jsonwire.to_json(ident)), raw
        assert ident_key == id_key(value["id"]) and type(ident_key[1]) is type(value["id"]), raw
    else:
        assert ident is mcp.ABSENT and id_text is None and ident_key is None
    p = value.get("params")
    exact_meta = p.get("_meta") if type(p) is dict else None
    assert _same(meta, _read_of(exact_meta)), raw
    if method in ("notifications/progress", "notifications/cancelled") and type(p) is dict:
        assert _same(params, p), raw
    else:
        assert params is None
    r = value.get("result")
    expected = r.get("resultType", mcp.ABSENT) if type(r) is dict else mcp.ABSENT
    assert (result_type is mcp.ABSENT and expected is mcp.ABSENT) or _same(result_type, expected), raw
    judged = "params" if "method" in value else "result"
    assert (member == b"") if judged not in value else _same(jsonwire.parse(member).value, value[judged]), raw
    assert member is None or member == member.strip() and member in raw, raw  # the member's bytes as written


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","id":1,"id":2,"result":{}}',          # a duplicate name: the exact path reports it
    b'{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}',      # ... at any depth
    b'{"jsonrpc":"2.0","id":1,"result":"\xff"}',              # not UTF-8
    b'{"jsonrpc":"2.0","id":1,"result":"\xed\xa0\x80"}',      # a surrogate written in UTF-8
    b'{"jsonrpc":"2.0","id":1.0,"result":{}}',                # an id with a fraction
    b'{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}',  # an id beyond 18 digits
    b'{"jsonrpc":"2.0","id":1,"result":{}} x',                # text after the value
    b'{"jsonrpc":"2.0","id":1,"result":[' + b"[" * 300 + b"]" * 300 + b"]}",  # deeper than the scanner goes
    b'{"jsonrp\\u0063":"2.0","id":1,"result":{}}',            # an escaped member name
    b'{"jsonrpc":"2.0","id":1,"result":{},}',                 # a trailing comma
    b'{"jsonrpc":"2.0","id":1,"result":NaN}',                 # not JSON
    b'[{"jsonrpc":"2.0","id":1,"result":{}}]',                # a batch
])
def test_frames_only_the_exact_parser_can_judge_are_left_to_it(raw):
    assert _wirescan.scan(raw) is None


def test_a_fraction_in_the_built_parts_is_kept_as_written():
    found = _wirescan.scan(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.50,"progress":2e0}}')
    assert found[5] == {"progressToken": NumberText("1.50"), "progress": NumberText("2e0")}


def test_of_params_meta_only_the_members_the_session_core_reads_are_built():
    raw = (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"clientInfo":{"n":123456789012345678901234},'
           b'"io.modelcontextprotocol/logLevel":"info","progressToken":"t","other":[1,2]}}}')
    found = _wirescan.scan(raw)
    assert found is not None and found[4] == {"progressToken": "t", mcp.META_LOG_LEVEL: "info"}
    assert _wirescan.scan(raw.replace(b'"t"', b'12345678901234567890123')) is None  # a value only the exact parser keeps


# -- whole sessions, both ways ----------------------------------------------------------------

_requests = ["tools/call", "tools/list", "ping", "initialize", "sampling/createMessage", "x.y/custom", "nope"]
_notes = ["notifications/progress", "notifications/cancelled", "notifications/initialized", "notifications/message",
          "notifications/tools/list_changed"]


@st.composite
def sessions(draw):
    frames = []
    era = draw(st.sampled_from(["2025-11-25", "2026-07-28", None]))
    if era == "2025-11-25" and draw(st.booleans()):
        frames += [("c2s", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})),
                   ("s2c", json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": era, "capabilities": {
                       "tools": {}, "logging": {}}, "serverInfo": {"name": "s", "version": "1"}}})),
                   ("c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}')]
    ids = st.one_of(st.integers(0, 5), st.sampled_from(["a", "b", "7"]), st.just(1.0), st.none())
    meta = {mcp.META_PROTOCOL_VERSION: "2026-07-28", mcp.META_CLIENT_CAPABILITIES: {}} if era == "2026-07-28" else {}
    for _ in range(draw(st.integers(1, 25))):
        direction = draw(st.sampled_from(["c2s", "s2c"]))
        shape = draw(st.sampled_from(["request", "request", "response", "response", "error", "note", "junk"]))
        if shape == "request":
            m = dict(meta)
            if draw(st.booleans()):
                m["progressToken"] = draw(st.sampled_from(["p", 1, 2.5]))
            if draw(st.booleans()):
                m[mcp.META_LOG_LEVEL] = "debug"
            body = {"jsonrpc": "2.0", "id": draw(ids), "method": draw(st.sampled_from(_requests)), "params": {"_meta": m}}
        elif shape == "response":
            body = {"jsonrpc": "2.0", "id": draw(ids), "result": draw(st.sampled_from(
                [{}, {"resultType": "complete"}, {"resultType": "nope"}, {"resultType": {}}]))}
        elif shape == "error":
            body = {"jsonrpc": "2.0", "id": draw(ids), "error": {"code": -32601, "message": "no"}}
        elif shape == "note":
            body = {"jsonrpc": "2.0", "method": draw(st.sampled_from(_notes)), "params": {
                "progressToken": draw(st.sampled_from(["p", 1, 2.5])), "progress": draw(st.sampled_from([1, 0.5, 3, "x"])),
                "requestId": draw(ids), "level": "info", "data": "d"}}
        else:
            body = draw(st.sampled_from(["not json", [], [{"jsonrpc": "2.0", "id": 9, "method": "ping"}], {"id": 1}]))
        frames.append((direction, body if type(body) is str else json.dumps(body)))
    return frames


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=sessions(), ended=st.booleans())
def test_generated_sessions_give_the_same_rows_and_findings_on_every_path(frames, ended):
    analyze(frames, ended=ended)  # asserts exact == fast


# -- the analysis rows, written while others write -------------------------------------------------

def _busy_database(path: str, sessions: int, per_session: int) -> None:
    from mcptap import store

    conn = store.connect(path)
    for n in range(sessions):
        sid = f"s{n}"
        store.insert_session(conn, {"id": sid, "transport": "stdio", "started_at": 0.0, "ended_at": 1.0})
        rows = []
        for seq in range(1, per_session + 1):
            i = (seq - 1) // 2
            raw = (b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i if seq % 2 else b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i)
            rows.append(store.frame_row(sid, seq, seq * 0.001, "c2s" if seq % 2 else "s2c", raw, 0))
        store.append_rows(conn, rows, [])
    conn.close()


def test_workers_still_report_when_the_database_stays_locked_and_the_index_is_kept(tmp_path):
    from mcptap import engine

    path = str(tmp_path / "locked.db")
    _busy_database(path, 3, 30)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        report = engine.analyze(path, workers=2)  # waits out the busy timeout once, then goes on
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert not report.stored and "locked" in report.not_stored_reason
    assert len(report.sessions) == 3 and all(s["frames"] == 30 for s in report.sessions)
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "messages_by_frame" in names


def test_analysis_rows_wait_while_another_writer_holds_the_database_and_are_all_stored(tmp_path):
    """Two workers, and a third connection taking the write lock in turns all along: rows that
    could not be written at once are written later, none lost, none twice."""
    import threading

    from mcptap import engine

    path = str(tmp_path / "busy.db")
    per_session = engine.FLUSH_FRAMES * 2 + 7
    _busy_database(path, 4, per_session)
    stop = threading.Event()
    held = []

    def hog():
        other = sqlite3.connect(path, isolation_level=None, timeout=10)
        while not stop.is_set():
            other.execute("BEGIN IMMEDIATE")
            held.append(1)
            stop.wait(0.03)
            other.execute("COMMIT")
            stop.wait(0.005)
        other.close()

    thread = threading.Thread(target=hog)
    thread.start()
    try:
        report = engine.analyze(path, workers=2)
    finally:
        stop.set()
        thread.join()
    assert held and report.stored, report.not_stored_reason
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*), count(DISTINCT session_id || ':' || frame_seq) FROM messages").fetchone() == (
        4 * per_session, 4 * per_session)
    assert db.execute("SELECT count(*) FROM analyses").fetchone() == (4,)
    # each: its last ping unanswered (error), and no revision to judge by (info)
    assert [s["findings"] for s in report.sessions] == [{"error": 1, "warning": 0, "info": 1}] * 4


def test_the_method_tables_read_from_the_cache_are_mcp_types_own(tmp_path):
    code = (
        "import json, sys\n"
        "from mcptap.analysis import mcp\n"
        "from mcp_types import methods, version\n"
        "assert mcp._TABLES == json.loads(json.dumps(mcp._from_mcp_types()))\n"
        "for name in ('CLIENT_REQUESTS', 'CLIENT_NOTIFICATIONS', 'SERVER_REQUESTS', 'SERVER_NOTIFICATIONS'):\n"
        "    assert mcp._TABLES[name] == [list(p) for p in getattr(methods, name)], name\n"
        "assert mcp.KNOWN_REVISIONS == tuple(version.KNOWN_PROTOCOL_VERSIONS)\n"
        "print(sorted(mcp.REQUESTS) == sorted(set(mcp.REQUESTS)))\n"
    )
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for run in ("written", "read"):  # the first run writes the cache, the second reads it
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (run, done.stderr)
    assert len(list((tmp_path / "mcptap").glob("mcp-types-*.json"))) == 1


@pytest.mark.parametrize("is_error, counted", [(True, 1), (False, 0), ("yes", 0)])
def test_a_tools_call_result_that_may_say_is_error_takes_the_fast_path_read_once_and_counts_as_exact(
        monkeypatch, is_error, counted):
    from tests.support.sessions import handshake, ok, req

    frames = handshake("2025-11-25") + [
        ("c2s", req(1, "tools/call", {"name": "t", "arguments": {}})),
        ("s2c", ok(1, {"content": [{"type": "text", "text": "caf\\u00e9"}], "isError": is_error}))]
    exact_frames = []
    real = session.SessionAnalysis._exact
    monkeypatch.setattr(session.SessionAnalysis, "_exact",
                        lambda self, seq, *rest: exact_frames.append(seq) or real(self, seq, *rest))
    analysis, _rows, findings = analyze(frames)  # the exact path alone, then the fast one: the same results
    assert analysis.method_stats["tools/call"]["tool_errors"] == counted
    assert 5 not in exact_frames[len(frames):]  # on the fast path, the result took no exact parse
    assert ("schema-violation" in {f[3] for f in findings}) is (is_error == "yes")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.lists(st.binary(min_size=1, max_size=6), max_size=4))
def test_the_native_literal_search_finds_what_in_finds(raw, needles):
    from mcptap import _wirescan
    from mcptap.analysis import literal

    needles = tuple(needles)
    expected = any(n in raw for n in needles)
    assert _wirescan.contains(raw, needles) is expected
    assert literal.contains(raw, needles) is expected
    for n in needles:  # each needle planted in the middle is found
        assert _wirescan.contains(raw[:7] + n + raw[7:], needles)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.lists(st.text("abkeyToKEN:/\xe9", min_size=1, max_size=6), max_size=4))
def test_the_native_folded_search_finds_what_in_finds_in_the_lowered_bytes(raw, words):
    from mcptap import _wirescan
    from mcptap.analysis import literal

    needles = tuple(w.lower().encode() for w in words)
    expected = any(n in raw.lower() for n in needles)
    assert _wirescan.contains_folded(raw, needles) is expected
    assert literal.contains_folded(raw, needles) is expected
    for w in words:  # each word planted, as written (any case), is found
        assert _wirescan.contains_folded(raw[:5] + w.encode() + raw[5:], needles)


def test_a_credential_word_is_found_in_any_case_and_progress_token_alone_is_none():
    from mcptap.analysis.security import secrets

    assert secrets.named(b'{"params":{"arguments":{"ApiKEY":"x"}}}')
    assert not secrets.named(b'{"params":{"_meta":{"progressToken":1},"arguments":{"q":"x"}}}')
    assert secrets.named(b'{"params":{"_meta":{"progressToken":1},"arguments":{"Token":"x"}}}')
    assert not secrets.named(b'{"params":{"arguments":{"q":"x"}}}')
