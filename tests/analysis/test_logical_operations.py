"""Logical operations (analyzer/analysis/logical_operations.py): a 2026-07-28 request answered input_required
and its retries, and a 2025-11-25 task with its polls, cancellation and result, joined into one
operation each; and the operations rules, each with a case that fires it and a neighbour that
must not, on frames built in a line, no database involved."""

from __future__ import annotations

import pytest

from mcptap.analysis import logical_operations, paired
from mcptap.analysis.rules import load
from tests.support.sessions import err, handshake, note, ok, req
from tests.support.sessions import modern as _modern


def modern(id, method, params=None, **meta):
    """A 2026-07-28 request of a client that declares elicitation, the input the rounds here ask for."""
    return _modern(id, method, params, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}, **meta})

R26, R25 = "2026-07-28", "2025-11-25"
ELICIT = {"ask": {"method": "elicitation/create", "params": {"mode": "form", "message": "who?",
                                                               "requestedSchema": {"type": "object"}}}}
ANSWER = {"ask": {"action": "accept", "content": {"name": "x"}}}
DONE = {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}


def frames(*pairs):
    """[(seq, ts, direction, raw bytes)], a millisecond apart."""
    return [(seq, 1000.0 + seq / 1000, d, raw.encode()) for seq, (d, raw) in enumerate(pairs, 1)]


def asked(state="S1", inputs=True):
    result = {"resultType": "input_required"}
    if inputs:
        result["inputRequests"] = ELICIT
    if state is not None:
        result["requestState"] = state
    return result


def mrtr(echo="S1", issued="S1", retry_id=2, name="greet", inputs=True):
    """tools/call id 1 answered input_required (requestState `issued`), retried (id `retry_id`,
    tool `name`) with `echo` (None: no requestState) and the answers, answered complete."""
    params = {"name": name, "arguments": {}, "inputResponses": ANSWER}
    if echo is not None:
        params["requestState"] = echo
    return frames(("c2s", modern(1, "tools/call", {"name": "greet", "arguments": {}})),
                  ("s2c", ok(1, asked(issued, inputs))),
                  ("c2s", modern(retry_id, "tools/call", params)),
                  ("s2c", ok(retry_id, DONE)))


def rows(fs):
    return logical_operations._rows(fs)


def joined(fs):
    return sorted(logical_operations.join(paired.operations("S", fs, rows(fs))), key=lambda o: (o.seq, o.idx or 0))


def codes(fs, revision=R26):
    return {f[3] for f in logical_operations.findings("S", fs, revision)}


CAPS = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}}}


def task_session(*after, created="working"):
    """2025-11-25: a task-augmented tools/call (id 1) answered CreateTaskResult T1, then `after`."""
    return frames(*handshake(R25, server_caps=CAPS),
                  ("c2s", req(1, "tools/call", {"name": "slow", "arguments": {}, "task": {"ttl": 60000}})),
                  ("s2c", ok(1, {"task": {"taskId": "T1", "status": created}})), *after)


def poll(i, status):
    return [("c2s", req(i, "tasks/get", {"taskId": "T1"})), ("s2c", ok(i, {"taskId": "T1", "status": status}))]


def fetch(i, meta=True):
    result = {"content": [], "isError": False}
    if meta:
        result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": "T1"}}
    return [("c2s", req(i, "tasks/result", {"taskId": "T1"})), ("s2c", ok(i, result))]


def cancel(i, answer=None):
    return [("c2s", req(i, "tasks/cancel", {"taskId": "T1"})),
            ("s2c", answer or ok(i, {"taskId": "T1", "status": "cancelled"}))]


# code: ((frames, revision) that fire it, a near neighbour that must not)
CASES = {
    "request-state-altered": ((mrtr(echo="S1-edited"), R26), (mrtr(), R26)),
    "request-state-unsolicited": ((mrtr(echo="S9", issued=None), R26), (mrtr(echo=None, issued=None), R26)),
    "retry-id-reused": ((mrtr(retry_id=1), R26), (mrtr(retry_id=2), R26)),
    "input-required-unsupported": (
        (frames(("c2s", modern(1, "tools/list")), ("s2c", ok(1, asked()))), R26),
        (frames(("c2s", modern(1, "prompts/get", {"name": "p"})), ("s2c", ok(1, asked()))), R26)),
    "input-required-empty": (
        (frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, asked(None, False)))), R26),
        (frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, asked("S", False)))), R26)),
    "task-created-not-working": ((task_session(*fetch(2), created="completed"), R25), (task_session(*fetch(2)), R25)),
    "task-status-after-terminal": ((task_session(*poll(2, "completed"), *poll(3, "working")), R25),
                                   (task_session(*poll(2, "working"), *poll(3, "completed")), R25)),
    "task-cancel-terminal-accepted": (
        (task_session(*poll(2, "completed"), *cancel(3)), R25),
        (task_session(*poll(2, "completed"), *cancel(3, err(3, -32602, "task is terminal"))), R25)),
    "task-result-meta-missing": ((task_session(*fetch(2, meta=False)), R25), (task_session(*fetch(2)), R25)),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_operations_code_fires_on_its_example(code):
    assert code in codes(*CASES[code][0])


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_operations_codes_near_neighbour_does_not_fire_it(code):
    assert code not in codes(*CASES[code][1])


def test_the_operations_rules_are_registered_in_their_group_with_a_reference():
    for code in CASES:
        assert load()[code].group == "operations" and load()[code].ref and load()[code].summary


def test_a_retry_joins_the_request_it_retries_into_one_operation_timed_from_the_first_request():
    first, retry = joined(mrtr())
    assert (first.operation, first.step, first.operation_latency_s) == ("1", "request", None)
    assert (retry.operation, retry.parent, retry.step) == ("1", 1, "retry")
    assert retry.operation_latency_s == pytest.approx(0.003)  # frame 1 to frame 4
    assert retry.latency_s == pytest.approx(0.001)


def test_a_retry_of_another_tool_starts_an_operation_of_its_own():
    first, retry = joined(mrtr(name="other"))
    assert retry.operation == "3" and retry.parent is None and retry.step == "retry"


def test_a_requeststate_issued_for_one_request_and_sent_on_another_is_unsolicited():
    fs = frames(("c2s", modern(1, "tools/call", {"name": "a"})), ("s2c", ok(1, asked("SA"))),
                ("c2s", modern(2, "tools/call", {"name": "b", "requestState": "SA"})), ("s2c", ok(2, DONE)))
    assert codes(fs) == {"request-state-unsolicited"}


def test_rounds_answered_input_required_twice_stay_one_operation_until_the_final_answer():
    fs = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, asked("A"))),
                ("c2s", modern(2, "tools/call", {"name": "t", "requestState": "A", "inputResponses": ANSWER})),
                ("s2c", ok(2, asked("B"))),
                ("c2s", modern(3, "tools/call", {"name": "t", "requestState": "B", "inputResponses": ANSWER})),
                ("s2c", ok(3, DONE)))
    ops = joined(fs)
    assert [(o.operation, o.parent, o.step) for o in ops] == [("1", None, "request"), ("1", 1, "retry"),
                                                              ("1", 3, "retry")]
    assert [o.operation_latency_s is not None for o in ops] == [False, False, True]
    assert codes(fs) == set()


def test_a_task_its_polls_status_notes_and_result_are_one_operation_ending_at_the_result():
    done = note("notifications/tasks/status", {"taskId": "T1", "status": "completed"})
    fs = task_session(*poll(2, "working"), ("s2c", done), *fetch(3))
    ops = [o for o in joined(fs) if o.method != "initialize" and o.method != "notifications/initialized"]
    assert [(o.method, o.operation, o.step) for o in ops] == [
        ("tools/call", "4", "request"), ("tasks/get", "4", "task-poll"),
        ("notifications/tasks/status", "4", "task-status"), ("tasks/result", "4", "task-result")]
    assert [o.operation_latency_s is not None for o in ops] == [False, False, False, True]
    assert ops[-1].operation_latency_s == pytest.approx(ops[-1].response_ts - ops[0].ts)
    assert codes(fs, R25) == set()


def test_a_status_note_sent_before_the_terminal_poll_is_not_after_it():
    fs = task_session(("s2c", note("notifications/tasks/status", {"taskId": "T1", "status": "working"})),
                      *poll(2, "completed"), *fetch(3))
    assert codes(fs, R25) == set()


def test_a_plain_request_is_an_operation_of_its_own_whose_latency_is_its_own():
    fs = frames(*handshake(), ("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []})))
    op = [o for o in joined(fs) if o.method == "tools/list"][0]
    assert (op.operation, op.parent, op.step) == ("4", None, "request")
    assert op.operation_latency_s == op.latency_s


def test_without_a_known_revision_no_operations_rule_judges():
    assert codes(mrtr(echo="edited"), None) == set()


def stats(fs, revision=R26):
    return logical_operations.judge("S", fs, revision)[1]


def test_the_method_table_counts_a_retried_call_once_timed_from_its_first_request():
    record = stats(mrtr())["tools/call"]
    assert (record["calls"], record["errors"], record["unanswered"]) == (1, 0, 0)
    assert record["latencies"].quantile(1.0) == pytest.approx(0.003)


def test_a_round_never_retried_is_an_unanswered_call_and_an_error_ending_one_is_an_error():
    left = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, asked("A"))),
                  ("c2s", modern(2, "tools/call", {"name": "t", "requestState": "A", "inputResponses": ANSWER})),
                  ("s2c", ok(2, asked("B"))))
    assert (stats(left)["tools/call"]["calls"], stats(left)["tools/call"]["unanswered"]) == (1, 1)
    refused = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, asked("A"))),
                     ("c2s", modern(2, "tools/call", {"name": "t", "requestState": "A", "inputResponses": ANSWER})),
                     ("s2c", err(2, -32602, "bad state")))
    assert (stats(refused)["tools/call"]["calls"], stats(refused)["tools/call"]["errors"]) == (1, 1)


def test_a_session_without_joined_operations_leaves_the_method_table_alone():
    fs = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, DONE)))
    assert stats(fs) == {}


def test_a_task_call_counts_once_timed_to_its_result_and_its_polls_stay_polls():
    fs = task_session(*poll(2, "completed"), *fetch(3))
    found = stats(fs, R25)
    assert set(found) == {"tools/call"} and found["tools/call"]["calls"] == 1
    assert found["tools/call"]["latencies"].quantile(1.0) == pytest.approx(0.005)  # frame 4 to frame 9


def test_each_frame_of_a_joined_operation_knows_its_place_and_the_last_answer_the_latency():
    found = logical_operations.members(joined(mrtr()))
    assert {seq: (m.operation, m.step, m.parent, m.answer) for seq, m in found.items()} == {
        1: ("1", "request", None, False), 2: ("1", "request", None, True),
        3: ("1", "retry", 1, False), 4: ("1", "retry", 1, True)}
    assert [found[s].latency_s is not None for s in (1, 2, 3, 4)] == [False, False, False, True]


def test_frames_of_operations_of_their_own_have_no_place_to_show():
    fs = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, DONE)))
    assert logical_operations.members(joined(fs)) == {}


def stored(tmp_path, fs) -> str:
    """A database file holding these frames as one ended stdio session."""
    from mcptap import store

    path = str(tmp_path / "ops.db")
    conn = store.connect(path)
    with store.write_transaction(conn):
        store.insert_session(conn, {"id": "S", "transport": "stdio", "started_at": 999.0, "ended_at": 1001.0,
                                    "exit_status": 0})
        store.insert_frames(conn, "S", [(seq, ts, d, raw, 0) for seq, ts, d, raw in fs])
    conn.close()
    return path


def test_analyze_stores_the_operations_findings_and_counts_a_retried_call_once(tmp_path):
    from mcptap import engine

    report = engine.analyze(stored(tmp_path, mrtr(echo="S1-edited")))
    assert [f.code for f in report.findings if f.code != "schema-violation"] == ["request-state-altered",
                                                                                "request-state-altered-accepted"]
    (record,) = [r for m, r in report.methods.items() if m == "tools/call"]
    assert record["calls"] == 1


def test_analyze_reads_no_frame_again_for_a_session_without_operations(tmp_path, monkeypatch):
    from mcptap import engine
    from mcptap.analysis import logical_operations as logical

    monkeypatch.setattr(logical, "judge", lambda *a, **k: pytest.fail("judged a session without operations"))
    fs = frames(("c2s", modern(1, "tools/call", {"name": "t"})), ("s2c", ok(1, DONE)))
    assert engine.analyze(stored(tmp_path, fs)).findings == []


ODD = [None, 7, 1.5, True, [], {}, {"a": [1]}, "x" * 300, 10 ** 30]


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_any_value_where_a_member_is_read_is_judged_without_failing(odd):
    mrtr_odd = frames(("c2s", modern(1, "tools/call", {"name": odd, "arguments": odd})),
                      ("s2c", ok(1, {"resultType": "input_required", "requestState": odd, "inputRequests": odd})),
                      ("c2s", modern(2, "tools/call", {"name": odd, "requestState": odd, "inputResponses": odd})),
                      ("s2c", ok(2, {"resultType": odd})))
    tasks_odd = task_session(("c2s", req(2, "tasks/get", {"taskId": odd})), ("s2c", ok(2, {"status": odd})),
                             ("c2s", req(3, "tasks/get", {"taskId": "T1"})), ("s2c", ok(3, {"status": odd})),
                             ("s2c", note("notifications/tasks/status", {"taskId": "T1", "status": odd})),
                             ("c2s", req(4, "tasks/result", {"taskId": odd})), ("s2c", ok(4, {"_meta": odd})),
                             ("c2s", req(5, "tasks/cancel", {"taskId": "T1"})), ("s2c", ok(5, odd)))
    for fs, revision in ((mrtr_odd, R26), (tasks_odd, R25)):
        logical_operations.judge("S", fs, revision)
        logical_operations.members(joined(fs))


def test_the_pandas_latency_table_over_operations_is_the_one_analyze_prints(tmp_path):
    import mcptap.data as mt
    from mcptap import engine

    listed = [(seq + 4, ts + 0.004, d, raw) for seq, ts, d, raw in frames(
        ("c2s", modern(9, "tools/list")), ("s2c", ok(9, {"tools": [], "resultType": "complete"})))]
    path = stored(tmp_path, mrtr() + listed)
    printed = engine.analyze(path).methods
    table = mt.latency(mt.operations(path))
    for method, record in printed.items():
        row = table.loc[method]
        assert (row.calls, row.errors, row.tool_errors, row.unanswered) == (
            record["calls"], record["errors"], record["tool_errors"], record["unanswered"]), method
        assert (row.p50_s, row.max_s) == pytest.approx((record["latencies"].quantile(0.5), record["latencies"].max))
    assert table.loc["tools/call", "calls"] == 1  # the input_required round and its retry: one call, timed whole


def _shifted(fs, by):
    return [(seq + by, ts + by / 1000, d, raw) for seq, ts, d, raw in fs]


def test_analyze_json_the_pandas_api_over_a_database_and_messages_and_the_report_count_an_operation_alike(tmp_path):
    import json
    import re

    import mcptap.data as mt
    from mcptap.report import html
    from tests.support.inprocess import cli

    left = frames(("c2s", modern(11, "tools/call", {"name": "t"})), ("s2c", ok(11, asked("A"))))
    refused = frames(("c2s", modern(21, "tools/call", {"name": "u"})), ("s2c", ok(21, asked("B"))),
                     ("c2s", modern(22, "tools/call", {"name": "u", "requestState": "B", "inputResponses": ANSWER})),
                     ("s2c", err(22, -32602, "bad state")))
    plain = frames(("c2s", modern(9, "tools/list")), ("s2c", ok(9, {"tools": [], "resultType": "complete"})),
                   ("c2s", modern(8, "tools/call", {"name": "v"})), ("s2c", ok(8, DONE)))
    path = stored(tmp_path, mrtr() + _shifted(left, 4) + _shifted(refused, 6) + _shifted(plain, 10))
    done = cli("analyze", "--db", path, "--format", "json", "--fail-on", "never")
    assert done.returncode == 0, done.stderr
    printed = {r["method"]: (r["calls"], r["errors"], r["unanswered"], r["p50_s"], r["max_s"])
               for r in json.loads(done.stdout)["methods"]}
    assert printed["tools/call"][:3] == (4, 1, 1)  # four operations of six requests: one error, one left waiting
    page = html.render(path)
    embedded = json.loads(re.search(r'id="mcptap-data">(.*?)</script>', page, re.S).group(1))["latency"]
    reported = {r["method"]: (r["calls"], r["errors"], r["unanswered"], r["p50_ms"] / 1e3, r["max_ms"] / 1e3)
                for r in embedded}
    for table in (mt.latency(path), mt.latency(mt.messages(path)), mt.latency(mt.operations(path))):
        found = {str(m): (r.calls, r.errors, r.unanswered, r.p50_s, r.max_s) for m, r in table.iterrows()}
        assert found.keys() == printed.keys()
        for method, row in found.items():
            assert row[:3] == printed[method][:3], method
            assert row[3:] == pytest.approx(printed[method][3:], abs=1e-6), method
    assert reported.keys() == printed.keys()
    for method, row in reported.items():
        assert row[:3] == printed[method][:3] and row[3:] == pytest.approx(printed[method][3:], abs=1e-6), method
    counted_apart = mt.latency(mt.messages(path, columns=["session_id", "frame_seq", "kind", "method",
                                                            "paired_frame", "latency_s"]))
    assert counted_apart.loc["tools/call", "calls"] == 6  # without the operation column: each request apart
