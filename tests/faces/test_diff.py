"""`mcptap diff`: two recorded sessions aligned by method and order, each difference named by its
JSON path, ids not compared; exit 0 equal, 1 different, 2 on error."""

from __future__ import annotations

import json

import pytest

from tests.conftest import mcptap
from tests.support.inprocess import cli

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
INIT_OK = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "serverInfo": {"name": "s"}}}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
TOOLS = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "echo", "description": "Return the text."}]}}


def call(ident, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}


def answer(ident, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}}


def session(name: str, *frames) -> list[dict]:
    """Frame-log records of a session: (direction, message or raw text) in order."""
    return [{"session": name, "seq": i + 1, "ts": 1.0 + i / 10, "direction": d,
             "raw": m if isinstance(m, str) else json.dumps(m)} for i, (d, m) in enumerate(frames)]


def database(tmp_path, *sessions: list[dict], name: str = "d.db") -> str:
    log = tmp_path / f"{name}.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for s in sessions for r in s), encoding="utf-8")
    db = tmp_path / name
    done = cli("import", "--db", str(db), str(log))
    assert done.returncode == 0, done.stderr
    return str(db)


def diff(db: str, *args: str):
    return cli("diff", "--db", db, *args)


BASE = [("c2s", INIT), ("s2c", INIT_OK), ("c2s", LIST), ("s2c", TOOLS), ("c2s", call(2, "a")), ("s2c", answer(2, "a"))]


def test_two_sessions_alike_but_for_their_ids_are_equal_and_exit_0(tmp_path):
    renumbered = [(d, dict(m, id=m["id"] + 10)) for d, m in BASE]
    db = database(tmp_path, session("one", *BASE), session("two", *renumbered))
    done = diff(db, "one", "two")
    assert done.returncode == 0, done.stdout
    assert done.stdout.decode().splitlines()[-1] == "equal: 3 messages compared, no differences"


def test_a_changed_tool_description_is_named_by_its_path_in_the_answer_and_exits_1(tmp_path):
    changed = dict(TOOLS, result={"tools": [{"name": "echo", "description": "Return the text, unchanged."}]})
    db = database(tmp_path, session("one", *BASE), session("two", *BASE[:3], ("s2c", changed), *BASE[4:]))
    done = diff(db, "one", "two")
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert "c2s request tools/list #1: frame 3 / frame 3" in lines
    assert ('  answer changed  $.result.tools[0].description: "Return the text." -> "Return the text, unchanged."'
            in lines)
    assert lines[-1] == "different: 1 of 3 messages differ, 0 in the first session only, 0 in the second only"


def test_requests_pair_by_method_and_order_not_by_position_and_extra_ones_are_in_one_session_only(tmp_path):
    # the second session lists the tools before initializing and calls echo twice
    b = [("c2s", LIST), ("s2c", TOOLS), ("c2s", INIT), ("s2c", INIT_OK), ("c2s", call(2, "a")),
         ("s2c", answer(2, "a")), ("c2s", call(3, "b")), ("s2c", answer(3, "b"))]
    db = database(tmp_path, session("one", *BASE), session("two", *b))
    done = diff(db, "one", "two", "--format", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    differing = [(m["kind"], m["method"], m["occurrence"], m["a_frame"], m["b_frame"])
                 for m in report["messages"] if not m["equal"]]
    assert differing == [("request", "tools/call", 2, None, 7)]
    assert report["equal"] is False and report["exit_status"] == 1


def test_ignore_leaves_a_volatile_member_out_of_the_comparison(tmp_path):
    db = database(tmp_path, session("one", *BASE), session("two", *BASE[:5], ("s2c", answer(2, "12:01"))))
    assert diff(db, "one", "two").returncode == 1
    assert diff(db, "one", "two", "--ignore-path", "$.result.content[*].text").returncode == 0


def test_the_params_of_a_request_a_missing_answer_and_a_frame_that_is_not_json_are_compared(tmp_path):
    a = [*BASE[:4], ("c2s", call(2, "a")), ("s2c", answer(2, "a")), ("s2c", "a log line")]
    b = [*BASE[:4], ("c2s", call(2, "b")), ("s2c", "another log line")]
    db = database(tmp_path, session("one", *a), session("two", *b))
    done = diff(db, "one", "two", "--format", "json")
    assert done.returncode == 1
    by_kind = {(m["kind"], m["method"]): m for m in json.loads(done.stdout)["messages"]}
    call_pair = by_kind[("request", "tools/call")]
    assert [(c["op"], c["path"], c["a"], c["b"]) for c in call_pair["changes"]] == [
        ("changed", "$.params.arguments.text", "a", "b")]
    assert call_pair["note"] == "answered in the first session only"
    line = by_kind[("unparseable", None)]
    assert [(c["path"], c["a"], c["b"]) for c in line["changes"]] == [("$", "a log line", "another log line")]


def test_sessions_may_come_from_two_databases(tmp_path):
    first = database(tmp_path, session("time", *BASE), name="yesterday.db")
    second = database(tmp_path, session("time", *BASE[:5], ("s2c", answer(2, "b"))), name="today.db")
    done = cli("diff", "--db", first, "--db-b", second, "time", "time")
    assert done.returncode == 1
    assert '  answer changed  $.result.content[0].text: "a" -> "b"' in done.stdout.decode().splitlines()


@pytest.mark.parametrize("args, said", [
    (("one", "nope"), "no session 'nope'"),
    (("one", "one", "--ignore-path", "$.["), "JSON path '$.['"),
    (("one", "one", "--db-b", "/nonexistent/x.db"), "x.db"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, said):
    db = database(tmp_path, session("one", *BASE))
    done = diff(db, *args)
    assert done.returncode == 2 and done.stdout == b""
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("mcptap: error: ") and said in err, err
