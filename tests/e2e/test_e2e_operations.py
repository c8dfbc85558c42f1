"""End to end, logical operations on real traffic recorded through `mcptap record`: the `mcp` SDK's
multi round-trip requests (2026-07-28: a tool call answered input_required, retried with the
answers and the sealed requestState; and a client that alters that requestState, which the SDK
server refuses), and the TypeScript SDK v1's experimental tasks (2025-11-25: a task-augmented
tool call, its tasks/get polls, a status notification and tasks/result)."""

import json
import os

import pytest

from tests.conftest import analyze_json, assert_no_false_findings, mcptap, run, tee, tool
from tests.support.inprocess import cli

pd = pytest.importorskip("pandas")
import mcptap.data as mt  # noqa: E402


def record_mrtr(db, sdk_python, mode: str) -> dict:
    result = run([sdk_python, tool("sdk_mrtr_client.py"), mode, "--",
                  *tee(db, sdk_python, tool("sdk_mrtr_server.py"), name="mrtr")], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)


def test_an_sdk_tool_call_answered_input_required_and_its_retry_are_one_operation_with_no_finding(db, sdk_python):
    out = record_mrtr(db, sdk_python, "echo")
    assert (out["protocol_version"], out["greet"]) == ("2026-07-28", "hello Ada")
    report = assert_no_false_findings(db)
    calls = [m for m in report["methods"] if m["method"] == "tools/call"]
    assert [m["calls"] for m in calls] == [1]  # two round trips, one call
    ops = mt.operations(db)
    first, retry = ops[ops["method"] == "tools/call"].itertuples()
    assert (first.step, retry.step) == ("request", "retry")
    assert retry.operation == first.operation == str(first.seq) and retry.parent == first.seq
    assert pd.isna(first.operation_latency_s)
    assert retry.operation_latency_s == pytest.approx((retry.response_ts - first.ts).total_seconds())
    assert retry.operation_latency_s > retry.latency_s
    shown = cli("show", "--db", str(db), "mrtr")
    assert shown.returncode == 0
    text = shown.stdout.decode()
    assert f"operation {first.seq}: retry of #{first.seq}, ends it" in text
    jsonl = cli("show", "--db", str(db), "mrtr", "--format", "jsonl").stdout
    records = [json.loads(line) for line in jsonl.splitlines()]
    joined = {r["seq"]: r["operation"] for r in records if "operation" in r}
    assert set(joined) == {first.seq, first.response_seq, retry.seq, retry.response_seq}
    assert joined[retry.response_seq]["latency_s"] == pytest.approx(retry.operation_latency_s, abs=1e-6)


def test_a_client_that_alters_the_sdk_servers_requeststate_is_found_at_its_retry(db, sdk_python):
    out = record_mrtr(db, sdk_python, "tamper")
    assert out["refused"] == -32602  # the SDK server's seal caught it too
    _, report = analyze_json(db)
    found = [(f["code"], f["frame"]) for f in report["findings"] if f["severity"] in ("error", "warning")]
    retry = mt.operations(db).query("step == 'retry'")
    assert found == [("request-state-altered", int(retry["seq"].iloc[0]))]


def test_a_ts_sdk_task_its_polls_and_its_result_are_one_operation_with_no_finding(db, ts_sdk):
    from tests.support.npm_servers import npm_tools

    node = npm_tools()[0]
    env = {**os.environ, "MCPTAP_TS_SDK": str(ts_sdk)}
    result = run([node, tool("ts_task_client.mjs"), "--", *tee(db, node, tool("ts_task_server.mjs"), name="task")],
                 timeout=120, env=env)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    out = json.loads(result.stdout)
    assert out["text"] == "baked for 150 ms" and out["statuses"][-1] == "completed"
    report = assert_no_false_findings(db)
    assert [m["calls"] for m in report["methods"] if m["method"] == "tools/call"] == [1]
    ops = mt.operations(db)
    call = ops[ops["method"] == "tools/call"].iloc[0]
    task = ops[ops["operation"] == call["operation"]]
    assert set(task["method"]) >= {"tools/call", "tasks/get", "tasks/result"}
    assert set(task["step"]) >= {"request", "task-poll", "task-result"}
    ended = task.dropna(subset=["operation_latency_s"])
    assert list(ended["method"]) == ["tasks/result"]
    assert ended["operation_latency_s"].iloc[0] == pytest.approx(
        (ended["response_ts"].iloc[0] - call["ts"]).total_seconds())
