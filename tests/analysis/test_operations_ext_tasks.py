"""2026-07-28 tasks (the io.modelcontextprotocol/tasks extension, SEP-2663) joined into operations
(analyzer/analysis/logical_operations.py): a tools/call answered with a CreateTaskResult, its `tasks/get`
polls, `tasks/update` and `tasks/cancel` and its `notifications/tasks` are one operation, ending at
the first poll that reports the task terminal. Planted: neither the `mcp` SDK nor the TypeScript
SDK cached for the tests speaks the extension (their tasks are 2025-11-25's)."""

from __future__ import annotations

import pytest

from mcptap.analysis import logical_operations as operations
from tests.analysis.test_logical_operations import ANSWER, ELICIT, R26, codes, frames, joined, stats, stored
from tests.support.sessions import err, note, ok
from tests.support.sessions import modern as _modern

TASKS = "io.modelcontextprotocol/tasks"


def modern(id, method, params=None):
    return _modern(id, method, params, **{"io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {}, "extensions": {TASKS: {}}}})


def task(status, **more):
    return {"taskId": "T1", "status": status, "createdAt": "2026-12-06T10:00:00Z",
            "lastUpdatedAt": "2026-12-06T10:00:00Z", "ttlMs": 60000, **more}


def created(status="working"):
    """tools/call id 1 answered with a CreateTaskResult T1."""
    return [("c2s", modern(1, "tools/call", {"name": "bake", "arguments": {}})),
            ("s2c", ok(1, {"resultType": "task", **task(status)}))]


def get(i, status, **more):
    return [("c2s", modern(i, "tasks/get", {"taskId": "T1"})),
            ("s2c", ok(i, {"resultType": "complete", **task(status, **more)}))]


def update(i):
    return [("c2s", modern(i, "tasks/update", {"taskId": "T1", "inputResponses": ANSWER})),
            ("s2c", ok(i, {"resultType": "complete"}))]


def cancel(i):
    return [("c2s", modern(i, "tasks/cancel", {"taskId": "T1"})), ("s2c", ok(i, {"resultType": "complete"}))]


DONE = {"result": {"content": [{"type": "text", "text": "baked"}], "resultType": "complete"}}


def test_a_task_its_polls_update_and_notes_are_one_operation_ending_at_the_poll_that_reports_it_terminal():
    fs = frames(*created(), *get(2, "input_required", inputRequests=ELICIT), *update(3),
                ("s2c", note("notifications/tasks", task("working"))), *get(4, "completed", **DONE),
                *get(5, "completed", **DONE))
    ops = joined(fs)
    assert [(o.method, o.operation, o.step) for o in ops] == [
        ("tools/call", "1", "request"), ("tasks/get", "1", "task-poll"), ("tasks/update", "1", "task-update"),
        ("notifications/tasks", "1", "task-status"), ("tasks/get", "1", "task-poll"), ("tasks/get", "1", "task-poll")]
    assert [o.operation_latency_s is not None for o in ops] == [False, False, False, False, True, False]
    assert ops[4].operation_latency_s == pytest.approx(ops[4].response_ts - ops[0].ts)
    assert codes(fs) == set()


def test_the_method_table_counts_a_task_call_once_timed_to_its_terminal_poll():
    fs = frames(*created(), *get(2, "working"), *get(3, "completed", **DONE))
    record = stats(fs)["tools/call"]
    assert (record["calls"], record["unanswered"]) == (1, 0)
    assert record["latencies"].quantile(1.0) == pytest.approx(0.005)  # frame 1 to frame 6
    pending = stats(frames(*created(), *get(2, "working")))["tools/call"]
    assert (pending["calls"], pending["unanswered"], pending["latencies"].count) == (1, 0, 0)  # a task: not unanswered


def test_a_task_of_the_extension_may_start_in_any_status_and_a_cancel_is_always_acknowledged():
    assert codes(frames(*created("completed"), *get(2, "completed", **DONE))) == set()
    assert codes(frames(*created(), *get(2, "completed", **DONE), *cancel(3))) == set()


def test_a_task_of_the_extension_that_reports_a_status_after_a_terminal_one_is_found():
    assert codes(frames(*created(), *get(2, "completed", **DONE), *get(3, "working"))) == {
        "task-status-after-terminal"}
    assert codes(frames(*created(), *get(2, "working"), *get(3, "completed", **DONE))) == set()


def test_a_poll_of_an_unknown_task_joins_nothing():
    fs = frames(*created(), ("c2s", modern(2, "tasks/get", {"taskId": "T9"})), ("s2c", err(2, -32602, "no task")))
    ops = joined(fs)
    assert [(o.operation, o.step) for o in ops] == [("1", "request"), ("3", "request")]  # frame 3: its own
    assert operations.members(ops) == {}


def test_analyze_and_the_pandas_api_count_the_task_call_once_and_its_polls_as_calls_of_their_own(tmp_path):
    import mcptap.data as mt
    from mcptap import engine

    path = stored(tmp_path, frames(*created(), *get(2, "working"), *update(3), *get(4, "completed", **DONE)))
    printed = engine.analyze(path).methods
    assert (printed["tools/call"]["calls"], printed["tasks/get"]["calls"], printed["tasks/update"]["calls"]) == (1, 2, 1)
    for table in (mt.latency(path), mt.latency(mt.messages(path)), mt.latency(mt.operations(path))):
        for method, record in printed.items():
            assert (table.loc[method, "calls"], table.loc[method, "unanswered"]) == (
                record["calls"], record["unanswered"]), method
            assert table.loc[method, "max_s"] == pytest.approx(record["latencies"].max), method
