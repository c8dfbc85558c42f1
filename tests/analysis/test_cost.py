"""What a server costs in a model's context (analyzer/analysis/cost.py) on frames built in a line:
the tokenizer named, definitions measured as compact JSON, tools also as their model projection,
results per tool with count, p50 and max."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcptap.analysis import cost
from mcptap.analysis.declared import collect
from tests.support.sessions import handshake, ok, req

TOOL = {"name": "echo", "description": "Return the text.", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}


def declared(results=("a", "bbbb", "cc")):
    pairs = list(handshake()) + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": [TOOL]})),
                                 ("c2s", req(2, "prompts/list")), ("s2c", ok(2, {"prompts": [{"name": "p"}]}))]
    for i, text in enumerate(results):
        pairs += [("c2s", req(10 + i, "tools/call", {"name": "echo", "arguments": {"text": text}})),
                  ("s2c", ok(10 + i, {"content": [{"type": "text", "text": text}], "_meta": {"big": "x" * 500}}))]
    return collect("S", [(seq, d, raw.encode()) for seq, (d, raw) in enumerate(pairs, 1)], results=True)


ESTIMATE = cost.Tokenizer(cost.ESTIMATE)


def test_the_estimate_is_a_token_per_four_bytes_rounded_up_and_says_it_is_one():
    assert (ESTIMATE.count(""), ESTIMATE.count("abcd"), ESTIMATE.count("abcde"), ESTIMATE.count("é")) == (0, 1, 2, 1)
    assert ESTIMATE.estimate and ESTIMATE.name == "bytes/4 estimate"


def test_the_tokenizer_is_o200k_base_when_an_installed_package_carries_it_else_the_estimate():
    import importlib.util

    tok = cost.tokenizer()
    if importlib.util.find_spec("bpe_openai") is None:
        assert tok.estimate and tok.name == cost.ESTIMATE
    else:
        assert (tok.name, tok.estimate) == ("o200k_base", False)
        assert tok.count("Hello world") == 2


def test_o200k_base_is_counted_without_decoding_the_other_encodings_and_as_the_package_counts():
    """The Rust extension alone: importing bpe_openai decodes three encodings in Python."""
    import importlib.util

    if importlib.util.find_spec("bpe_openai") is None:
        pytest.skip("without the [tokens] extra")
    code = r"""
import sys, warnings
from mcptap.analysis import cost
texts = ["Hello world", "h\u00e9llo \u4f60\u597d " * 50, '{"a": [1, 2, 3]}', "\ud800 lone"]
ours = [cost.tokenizer().count(t) for t in texts]
assert "bpe_openai" not in sys.modules, "the package was imported"
warnings.simplefilter("ignore")
import bpe_openai
enc = bpe_openai.get_encoding("o200k_base")
theirs = [len(enc.encode(t.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))) for t in texts]
assert ours == theirs, (ours, theirs)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_a_tool_is_projected_to_the_fields_a_model_provider_keeps():
    assert cost.projection(TOOL) == {"name": "echo", "description": "Return the text.",
                                     "input_schema": {"type": "object"}}


def test_definitions_are_measured_as_compact_json_and_tools_also_as_their_projection():
    figures = cost.definitions_cost(declared(), ESTIMATE)
    (tool,) = figures["tools"]
    assert tool["bytes"] == len(cost.as_text(TOOL).encode()) and tool["tokens"] == -(-tool["bytes"] // 4)
    assert tool["model_bytes"] == len(cost.as_text(cost.projection(TOOL)).encode()) < tool["bytes"]
    assert [p["name"] for p in figures["prompts"]] == ["p"] and figures["instructions"] is None
    assert figures["total"]["model_bytes"] == tool["model_bytes"] + figures["prompts"][0]["bytes"]


def test_results_per_tool_give_count_p50_and_max_without_the_meta():
    (row,) = cost.results_cost(declared().results, ESTIMATE)
    sizes = sorted(len(cost.as_text({"content": [{"type": "text", "text": t}]}).encode()) for t in ("a", "bbbb", "cc"))
    assert (row["tool"], row["count"], row["bytes_p50"], row["bytes_max"]) == ("echo", 3, sizes[1], sizes[2])


def test_the_report_names_the_tokenizer_and_pools_a_servers_sessions():
    figures = cost.report([(declared(), ("srv", "1")), (declared(("z",)), ("srv", "1"))], ESTIMATE)
    assert (figures["tokenizer"], figures["estimate"]) == (cost.ESTIMATE, True)
    (server,) = figures["servers"]
    assert server["sessions"] == 2 and server["results"][0]["count"] == 4
    assert [s["results"][0]["count"] for s in figures["sessions"]] == [3, 1]


@pytest.mark.parametrize("values, p50", [([1], 1), ([1, 2], 1), ([1, 2, 3], 2), ([1, 2, 3, 4], 2)])
def test_the_p50_is_the_lower_median(values, p50):
    assert cost.median(values) == p50


def test_definitions_within_the_budget_in_bytes_are_judged_without_loading_the_tokenizer(monkeypatch):
    """A token is at least a byte: a server whose definitions take fewer bytes than the budget
    is within it, and no tokenizer is built for it; one over it in bytes is counted in tokens."""
    built = []
    monkeypatch.setattr(cost, "tokenizer", lambda: built.append(1) or ESTIMATE)
    small = declared()
    assert cost.budget_findings(small, ("s", "1")) == [] and built == []
    size = cost.definitions_cost(small, cost._BYTES)["total"]["model_tokens"]
    policy = type("P", (), {"context_budget": size - 1, "severity": lambda self, code, level: level})()
    assert cost.budget_findings(small, ("s", "1"), policy) == [] and built == [1]  # bytes/4 is within it
    policy.context_budget = 1
    [finding] = cost.budget_findings(small, ("s", "1"), policy)
    assert finding.code == cost.BUDGET_CODE


def test_analyze_gives_the_cost_of_the_definitions_it_read_the_same_as_read_again_in_one_process_or_workers(tmp_path):
    """The JSON report's `cost` comes from the definitions the analysis read (engine.analyze's
    `cost`), equal to `cost_report` reading them again, with and without worker processes."""
    from mcptap import engine, store
    from mcptap.engine import declared_pass as definitions

    db = str(tmp_path / "cost.db")
    conn = store.connect(db)
    tools = {"alpha": [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}],
             "beta": [{"name": "add", "description": "Add " * 30, "inputSchema": {"type": "object"}},
                      {"name": "sub", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}]}
    for n, label in enumerate(("alpha", "beta", "alpha", "quiet")):
        sid = f"00000000-0000-7000-8000-00000000000{n}"
        store.insert_session(conn, {"id": sid, "transport": "stdio", "label": label, "started_at": 1000.0 + n,
                                    "ended_at": 1001.0 + n, "command": "[]", "exit_status": 0, "recorder": "test",
                                    "host": "h", "pid": 1})
        pairs = list(handshake())
        if label != "quiet":
            pairs += [("c2s", req(7, "tools/list")), ("s2c", ok(7, {"tools": tools[label][: n + 1]}))]
        rows = [(sid, seq, 1000.0 + n + seq / 100, d, raw, len(raw), 0, None) for seq, (d, raw) in enumerate(pairs, 1)]
        store.append_rows(conn, rows, [])
    conn.close()
    again = definitions.cost_report(db, results=False)
    assert len(again["sessions"]) == 3 and again["servers"]
    for workers in (1, 2):
        assert engine.analyze(db, workers=workers, cost=True).cost == again
    assert engine.analyze(db, workers=2).cost is None


def test_a_database_whose_sessions_declare_nothing_gets_its_cost_without_building_the_tokenizer(tmp_path, monkeypatch):
    """The token counter (64 MB, 50 ms) is built on the first session with something to count;
    a report with none names the tokenizer it would have used."""
    from mcptap import engine, store

    db = str(tmp_path / "quiet.db")
    conn = store.connect(db)
    sid = "00000000-0000-7000-8000-000000000009"
    store.insert_session(conn, {"id": sid, "transport": "stdio", "label": "quiet", "started_at": 1000.0,
                                "ended_at": 1001.0, "command": "[]", "exit_status": 0, "recorder": "test",
                                "host": "h", "pid": 1})
    rows = [(sid, seq, 1000.0 + seq / 100, d, raw, len(raw), 0, None) for seq, (d, raw) in enumerate(handshake(), 1)]
    store.append_rows(conn, rows, [])
    conn.close()
    cost.tokenizer.cache_clear()
    built = []
    real = cost._o200k_count
    monkeypatch.setattr(cost, "_o200k_count", lambda: built.append(1) or real())
    report = engine.analyze(db, cost=True, workers=1)
    assert built == [] and report.cost["sessions"] == [] and report.cost["servers"] == []
    assert (report.cost["tokenizer"], report.cost["estimate"]) == (cost.tokenizer().name, cost.tokenizer().estimate)
    assert built == [1]
