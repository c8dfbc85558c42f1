"""Bounded work for any input: answers out of order pair in linear time (`diff`, `serve`), a
JSON path with several `..` steps over a deeply nested answer is matched without backtracking,
an id with an exponent past any Decimal is kept and compared as written (`show`, `diff`,
`analyze`, `serve`, a live client of `serve`), and every wrong-typed field of a frame-log line is
a one-line refusal (or, for a null optional field, the same as its absence). Real frame-log
files; the bounded commands run as real `mcptap` processes (the others in-process:
tests/support/inprocess.py), the bounds are the CPU seconds the process used (a shared,
loaded machine stretches wall time, not CPU time), generous (the quadratic code took several
times as long), and the speed figures are bench/work.py's."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest

from mcptap.errors import ImportFormatError
from mcptap.wire import framelog as framelog_module
from tests.conftest import mcptap, run
from tests.support.inprocess import cli

INIT = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
INIT_ANSWER = ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
               '"serverInfo":{"name":"s","version":"1"}}}')
HUGE = "1e9990000000000000000001"  # an exponent past what a Decimal holds (10**18)
OUT_OF_ORDER = 30_000  # requests, all sent before the first answer, answered last first
PAIRING_BOUND_S = 15.0  # CPU seconds; the scan per answer took about 28 s for the diff, the map 4 s
DEPTH = 300  # nested `content` arrays of the deep answer
PATH_BOUND_S = 10.0  # CPU seconds; `$..content..content..text` took over 120 s backtracking, under 1 s now


def line(seq: int, direction: str, raw: str, extra: dict | None = None) -> str:
    """A frame line; `extra` adds or replaces fields (any of them)."""
    return json.dumps({"session": "s1", "seq": seq, "ts": 1764460800 + seq / 1000, "direction": direction,
                       "raw": raw} | (extra or {}))


def framelog(path: Path, frames: list[tuple[str, str]]) -> Path:
    """A frame-log file of (direction, raw) frames, after a handshake."""
    rows = [("c2s", INIT), ("s2c", INIT_ANSWER), *frames]
    path.write_text("".join(line(i + 1, d, raw) + "\n" for i, (d, raw) in enumerate(rows)), encoding="utf-8")
    return path


def imported(tmp_path: Path, name: str, frames: list[tuple[str, str]]) -> Path:
    db = tmp_path / f"{name}.db"
    result = cli("import", str(framelog(tmp_path / f"{name}.jsonl", frames)), "--db", str(db), timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return db


def cpu_run(argv: list[str], **kw) -> tuple[subprocess.CompletedProcess, float]:
    """`run`, and the CPU seconds (user and system) the process took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run(argv, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def no_traceback(result: subprocess.CompletedProcess) -> None:
    err = result.stderr.decode(errors="replace")
    assert "Traceback" not in err and "InvalidOperation" not in err, err[-2000:]


# -- pairing answers out of order ------------------------------------------------------------

@pytest.fixture(scope="module")
def reversed_answers(tmp_path_factory) -> Path:
    """A session of OUT_OF_ORDER pings, all sent before any answer, answered last first."""
    pings = [("c2s", '{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i) for i in range(1, OUT_OF_ORDER + 1)]
    answers = [("s2c", '{"jsonrpc":"2.0","id":%d,"result":{}}' % i) for i in range(OUT_OF_ORDER, 0, -1)]
    return imported(tmp_path_factory.mktemp("order"), "reversed", pings + answers)


@pytest.mark.serial
def test_diff_pairs_thirty_thousand_answers_given_last_first_in_linear_time(reversed_answers):
    result, took = cpu_run(mcptap("diff", "--db", str(reversed_answers), "s1", "s1"), timeout=600)
    no_traceback(result)
    assert result.returncode == 0, result.stdout.decode()[-500:]
    assert f"{OUT_OF_ORDER + 1} messages compared" in result.stdout.decode()
    assert took < PAIRING_BOUND_S, f"diff took {took:.1f} CPU seconds"


@pytest.mark.serial
def test_serve_loads_thirty_thousand_answers_given_last_first_and_answers_in_bounded_time(reversed_answers):
    requests = (INIT + "\n" + '{"jsonrpc":"2.0","id":"last","method":"ping"}' + "\n").encode()
    result, took = cpu_run(mcptap("serve", "--db", str(reversed_answers), "s1"), input=requests, timeout=600)
    no_traceback(result)
    answers = [json.loads(x) for x in result.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, "last"] and answers[1]["result"] == {}
    assert took < PAIRING_BOUND_S, f"serve took {took:.1f} CPU seconds"


# -- JSON paths with `..` --------------------------------------------------------------------

def deep_answer(text: str) -> str:
    inner = '{"type":"text","text":"%s"}' % text
    return '{"jsonrpc":"2.0","id":1,"result":' + '{"content":[' * DEPTH + inner + "]}" * DEPTH + "}"


@pytest.mark.serial
@pytest.mark.parametrize("pattern", ["$..content..text", "$..content..content..text"])
def test_diff_ignores_a_path_of_several_deep_steps_in_a_deeply_nested_answer_in_bounded_time(tmp_path, pattern):
    call = ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}')
    a = imported(tmp_path, "a", [call, ("s2c", deep_answer("one"))])
    b = imported(tmp_path, "b", [call, ("s2c", deep_answer("two"))])
    plain = cli("diff", "--db", str(a), "--db-b", str(b), "s1", "s1", timeout=120)
    assert plain.returncode == 1 and "content" in plain.stdout.decode()  # the texts differ
    result, took = cpu_run(mcptap("diff", "--db", str(a), "--db-b", str(b), "s1", "s1", "--ignore", pattern),
                           timeout=600)
    no_traceback(result)
    assert result.returncode == 0, result.stdout.decode()[-500:]
    assert took < PATH_BOUND_S, f"diff took {took:.1f} CPU seconds"


# -- ids as written --------------------------------------------------------------------------

@pytest.fixture
def huge_ids(tmp_path) -> Path:
    return imported(tmp_path, "huge", [
        ("c2s", '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % HUGE),
        ("s2c", '{"jsonrpc":"2.0","id":%s,"result":{}}' % HUGE),
        ("c2s", '{"jsonrpc":"2.0","id":-%s,"method":"ping"}' % HUGE),
        ("s2c", '{"jsonrpc":"2.0","id":-%s,"result":{}}' % HUGE),
        ("c2s", '{"jsonrpc":"2.0","id":1e-9990000000000000000001,"method":"ping"}'),
        ("s2c", '{"jsonrpc":"2.0","id":1e-9990000000000000000001,"result":{}}'),
    ])


def test_show_prints_an_id_with_an_exponent_past_any_decimal_as_written(huge_ids):
    result = cli("show", "--db", str(huge_ids), "s1")
    no_traceback(result)
    assert result.returncode == 0 and HUGE in result.stdout.decode()


def test_diff_compares_sessions_with_ids_past_any_decimal(huge_ids):
    result = cli("diff", "--db", str(huge_ids), "s1", "s1")
    no_traceback(result)
    assert result.returncode == 0, result.stdout.decode()


def test_analyze_pairs_ids_past_any_decimal_as_written(huge_ids):
    result = cli("analyze", "--db", str(huge_ids), "--format", "json")
    no_traceback(result)
    assert result.returncode in (0, 1), result.stderr.decode()
    report = json.loads(result.stdout)
    codes = {f["code"] for f in report["findings"]}
    assert "could not be analysed" not in result.stderr.decode()
    assert not codes & {"response-unknown-id", "request-unanswered"}, codes  # each answer found its request


def test_serve_answers_a_recorded_id_past_any_decimal_under_the_live_id(huge_ids):
    requests = (INIT + "\n" + '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % HUGE + "\n").encode()
    result = cli("serve", "--db", str(huge_ids), "s1", input=requests)
    no_traceback(result)
    assert result.returncode == 0
    assert result.stdout.splitlines()[1] == b'{"jsonrpc":"2.0","id":%s,"result":{}}' % HUGE.encode()


def test_serve_on_stdio_survives_a_live_client_sending_an_id_past_any_decimal(tmp_path):
    db = imported(tmp_path, "plain", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
                                      ("s2c", '{"jsonrpc":"2.0","id":1,"result":{}}')])
    requests = [INIT, '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % HUGE,
                '{"jsonrpc":"2.0","id":%s,"result":{}}' % HUGE, '{"jsonrpc":"2.0","id":2,"method":"ping"}']
    result = cli("serve", "--db", str(db), "s1", input=("\n".join(requests) + "\n").encode())
    no_traceback(result)
    assert result.returncode == 0
    ids = [json.loads(x)["id"] for x in result.stdout.splitlines()]
    assert result.stdout.splitlines()[1].startswith(b'{"jsonrpc":"2.0","id":%s,' % HUGE.encode())
    assert ids[0] == 0 and ids[-1] == 2 and len(ids) == 3


# -- frame-log fields of the wrong type ------------------------------------------------------

PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'


NULLS = [{"meta": None}, {"meta": {"incomplete": None}}, {"meta": {"truncated": None}}, {"meta": {"redacted": None}},
         {"seq": None}, {"transport": None}]
WRONG = [
    {"meta": []}, {"meta": "x"}, {"meta": {"incomplete": "yes"}}, {"meta": {"incomplete": 1}},
    {"meta": {"truncated": "big"}}, {"meta": {"truncated": 1e30}}, {"meta": {"truncated": 2**70}},
    {"meta": {"truncated": True}}, {"meta": {"redacted": "$.a"}}, {"meta": {"redacted": [1]}},
    {"seq": 1.5}, {"seq": "1"}, {"seq": -1}, {"ts": "now"}, {"ts": None}, {"direction": None},
    {"transport": 5}, {"session": {}}, {"raw": None}, {"record": 5},
]
WRONG_SESSION = [{"spool": "no"}, {"spool": 1}, {"label": 5}, {"started_at": "x"}]


def read_lines(*lines: str) -> list:
    """The records framelog reads from these lines (a file's one block)."""
    block = framelog_module.Block("\n".join(lines).encode(), 1, False, 0)
    return list(framelog_module.records(block, path="log.jsonl", default_session="d", warn=print))


@pytest.mark.parametrize("fields", NULLS)
def test_a_null_optional_field_of_a_frame_log_line_reads_as_its_absence(fields):
    (null,) = read_lines(line(1, "c2s", PING, fields))
    without = json.loads(line(1, "c2s", PING))
    without.pop(next(iter(fields)), None)
    (absent,) = read_lines(json.dumps(without))
    assert null == absent


@pytest.mark.parametrize("fields", WRONG)
def test_a_wrong_typed_field_of_a_frame_log_line_is_refused_naming_the_line(fields):
    with pytest.raises(ImportFormatError, match="log.jsonl:1: "):
        read_lines(line(1, "c2s", PING, fields))


@pytest.mark.parametrize("fields", WRONG_SESSION)
def test_a_wrong_typed_field_of_a_session_record_is_refused_naming_the_line(fields):
    with pytest.raises(ImportFormatError, match="log.jsonl:1: "):
        read_lines(json.dumps({"record": "session", "session": "s1", **fields}), line(1, "c2s", PING))


@pytest.mark.parametrize("command", ["import", "analyze"])
def test_import_and_analyze_of_a_frame_log_line_with_null_meta_read_it_as_no_meta(tmp_path, command):
    log = tmp_path / "log.jsonl"
    log.write_text(line(1, "c2s", PING, {"meta": None}) + "\n", encoding="utf-8")
    argv = ["import", str(log), "--db", str(tmp_path / "x.db")] if command == "import" else ["analyze", str(log)]
    result = cli(*argv)
    no_traceback(result)
    assert result.returncode in ((0,) if command == "import" else (0, 1)), result.stderr.decode()


@pytest.mark.parametrize("command", ["import", "analyze"])
@pytest.mark.parametrize("fields", [{"meta": {"incomplete": "yes"}}, {"meta": {"truncated": 2**70}}])
def test_import_and_analyze_refuse_a_wrong_typed_meta_field_in_one_line(tmp_path, command, fields):
    log = tmp_path / "log.jsonl"
    log.write_text(line(1, "c2s", PING, fields) + "\n", encoding="utf-8")
    argv = ["import", str(log), "--db", str(tmp_path / "x.db")] if command == "import" else ["analyze", str(log)]
    result = cli(*argv)
    err = result.stderr.decode()
    assert result.returncode == 2 and len(err.strip().splitlines()) == 1 and "log.jsonl:1" in err, err


# -- the pure parts, against references ------------------------------------------------------

def _backtracking(pattern: list, i: int, path: tuple, j: int) -> bool:
    """The matcher the automaton replaced (exponential in `..` steps): the reference."""
    from mcptap.wire.jsonpath import ANY, DEEP

    if i == len(pattern):
        return True
    if pattern[i] is DEEP:
        return any(_backtracking(pattern, i + 1, path, k) for k in range(j, len(path)))
    if j == len(path):
        return False
    step = pattern[i]
    if step is ANY or (step == path[j] and type(step) is type(path[j])):
        return _backtracking(pattern, i + 1, path, j + 1)
    return False


def test_the_path_automaton_matches_as_the_backtracking_matcher_did():
    import random

    from mcptap.wire.jsonpath import Ignore

    rnd = random.Random(28)
    steps = [".a", ".b", "[0]", "[1]", "[*]", ".*", "..a", "..b", "..*", '["0"]']
    matched = 0
    for _ in range(5000):
        texts = ["".join(rnd.choice(steps) for _ in range(rnd.randint(1, 4))) for _ in range(rnd.randint(1, 2))]
        path = tuple(rnd.choice(["a", "b", 0, 1, "0"]) for _ in range(rnd.randint(0, 6)))
        ignore = Ignore(texts)
        want = any(_backtracking(p, 0, path, 0) for p in ignore.patterns)
        assert ignore.matches(path) == want, (texts, path)
        matched += want
    assert 500 < matched < 4500  # both answers were asked for


@pytest.mark.parametrize("text, integral, exact", [
    (HUGE, True, "Infinity"), ("-" + HUGE, True, "-Infinity"), ("1e-9990000000000000000001", False, "0"),
    ("0e9990000000000000000001", True, "0"), ("1.5e3", True, "1.5E+3"), ("1.5", False, "1.5"),
])
def test_a_number_past_any_decimal_is_integral_by_its_sign_and_kept_as_written(text, integral, exact):
    from decimal import Decimal

    from mcptap.analysis.messages import id_key, loose_key
    from mcptap.wire.jsonwire import NumberText

    n = NumberText(text)
    assert n.is_integral is integral and n.exact == Decimal(exact)
    assert id_key(n) == ("t", text)
    assert loose_key(n) == {"1.5e3": "1500"}.get(text, text)


@pytest.mark.parametrize("prefix, ident", [
    (b'{"jsonrpc":"2.0","id":5,"result":{"pad":"xxx', 5),
    (b'{"jsonrpc":"2.0", "id" : "a\\"b", "result":{', 'a"b'),
    (b'{"result":{"id":3},"id":7,"x":"', 7),
    (b'{"result":{"id":3,"pad":"xxx', None),
    (b'[{"id":1}', None),
    (b'{"id":1e9990000000000000000001,"result":"', "1e9990000000000000000001"),
])
def test_the_id_of_a_frame_kept_cut_is_read_from_its_top_level_start(prefix, ident):
    from mcptap.replay.script import NO_ID, id_in_prefix
    from mcptap.wire.jsonwire import NumberText

    found = id_in_prefix(prefix)
    if ident is None:
        assert found is NO_ID
    else:
        assert (found.text if type(found) is NumberText else found) == ident
