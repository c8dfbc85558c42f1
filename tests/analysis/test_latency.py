"""Latency quantiles in bounded memory (analyzer/analysis/latency.py)."""

import random

from mcptap.analysis.latency import EXACT, RELATIVE_ERROR, LatencySketch, nearest_rank


def test_quantiles_stay_within_the_relative_error_of_the_exact_ones():
    rng = random.Random(7)
    values = [rng.lognormvariate(-5, 1.5) for _ in range(20_000)]
    sketch = LatencySketch()
    for v in values:
        sketch.add(v)
    values.sort()
    for q in (0.5, 0.95, 0.99):
        exact = nearest_rank(values, q)
        assert abs(sketch.quantile(q) - exact) <= RELATIVE_ERROR * exact * 1.01
    assert sketch.max == values[-1] and sketch.count == len(values)


def test_memory_is_bounded_by_the_range_not_the_count():
    sketch = LatencySketch()
    for i in range(200_000):
        sketch.add(0.001 + (i % 1000) * 1e-6)
    assert len(sketch.buckets) < 100


def test_merged_sketches_answer_as_one():
    a, b, both = LatencySketch(), LatencySketch(), LatencySketch()
    for i in range(1, 1000):
        (a if i % 2 else b).add(i / 1000)
        both.add(i / 1000)
    a.merge(b)
    assert a.quantile(0.5) == both.quantile(0.5) and a.max == both.max and a.count == both.count


def test_an_empty_sketch_has_no_quantiles():
    assert LatencySketch().quantile(0.5) is None


# -- tool errors: a tools/call answered with `isError: true` is counted apart ---------------------

TOOL_ERROR_CASES = [  # (the answer's result, counted as a tool error)
    ('{"content":[],"isError":true}', True),
    ('{"content":[],"is\\u0045rror":true}', True),  # the name spelled with an escape: the same member
    ('{"content":[],"isError":false}', False),
    ('{"content":[]}', False),
    ('{"content":[],"isError":"true"}', False),
]


def test_a_tool_result_with_isError_true_is_a_tool_error_not_an_error_on_both_paths():
    import json

    from tests.support.sessions import analyze, handshake, req

    frames = list(handshake())
    for n, (result, _) in enumerate(TOOL_ERROR_CASES, 1):
        frames += [("c2s", req(n, "tools/call", {"name": "t", "arguments": {}})),
                   ("s2c", '{"jsonrpc":"2.0","id":%d,"result":%s}' % (n, result))]
    frames += [("c2s", req(99, "tools/call", {"name": "t"})),
               ("s2c", json.dumps({"jsonrpc": "2.0", "id": 99, "error": {"code": -32602, "message": "no"}}))]
    analysis, _, findings = analyze(frames)  # the exact and the fast path, compared
    stats = analysis.method_stats["tools/call"]
    expected = sum(counted for _, counted in TOOL_ERROR_CASES)
    assert (stats["calls"], stats["errors"], stats["tool_errors"]) == (len(TOOL_ERROR_CASES) + 1, 1, expected)


def test_tool_errors_are_a_column_of_the_json_report_the_table_and_the_pandas_api(tmp_path):
    import io
    import json

    import mcptap.data as mt
    from mcptap import engine, report, store
    from mcptap.readers import importer
    from tests.support.sessions import handshake, req

    frames = list(handshake()) + [
        ("c2s", req(1, "tools/call", {"name": "t"})),
        ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}'),
        ("c2s", req(2, "tools/call", {"name": "t"})), ("s2c", '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}')]
    log = tmp_path / "tools.jsonl"
    records = [{"session": "s", "seq": i, "ts": 1000.0 + i / 100, "direction": d, "raw": raw}
               for i, (d, raw) in enumerate(frames, 1)]
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    db = str(tmp_path / "t.db")
    conn = store.connect(db)
    importer.import_file(conn, str(log))
    conn.close()
    result = engine.analyze(db, workers=1)
    out = io.StringIO()
    report.write_json(result, out)
    (tools,) = [m for m in json.loads(out.getvalue())["methods"] if m["method"] == "tools/call"]
    assert (tools["calls"], tools["errors"], tools["tool_errors"]) == (2, 0, 1)
    table = io.StringIO()
    report.write_table(result, table)
    header = next(line for line in table.getvalue().splitlines() if line.startswith("method"))
    assert "tool errors" in header
    latency = mt.latency(mt.messages(db))
    assert (latency.loc["tools/call", "errors"], latency.loc["tools/call", "tool_errors"]) == (0, 1)
    assert list(mt.messages(db, columns=["frame_seq", "tool_error"]).query("tool_error")["frame_seq"]) == [5]
def test_percentiles_are_by_nearest_rank_and_exact_for_small_counts():
    sketch = LatencySketch()
    for v in (0.034, 0.0011, 0.0023):
        sketch.add(v)
    assert (sketch.quantile(0.5), sketch.quantile(0.95), sketch.quantile(0)) == (0.0023, 0.034, 0.0011)
    assert nearest_rank([0.4, 0.1, 0.3, 0.2], 0.5) == 0.2 and nearest_rank([0.4, 0.1, 0.3, 0.2], 0.51) == 0.3
    assert nearest_rank([], 0.5) is None


def test_a_sketch_is_exact_up_to_its_exact_count_and_within_the_error_past_it():
    values = [(i * 7919 % 10_007) / 1e4 + 1e-3 for i in range(EXACT)]
    sketch = LatencySketch()
    for v in values:
        sketch.add(v)
    assert sketch.quantile(0.95) == nearest_rank(values, 0.95)
    sketch.add(1.0)
    exact = nearest_rank(values + [1.0], 0.95)
    assert sketch.quantile(0.95) != exact and abs(sketch.quantile(0.95) - exact) <= RELATIVE_ERROR * exact * 1.01
