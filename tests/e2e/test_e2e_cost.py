"""`mcptap cost` on a real recording: the real `mcp` SDK client drives the real SDK test server
through `mcptap record`; cost prints per-tool tokens with the tokenizer named, and the same
definitions' figures are the `cost` member of `analyze --format json`, and `mcptap.data.cost` gives
the same."""

import json

from tests.conftest import mcptap, run, tee, tool
from tests.support.inprocess import cli

TOOLS = {"add", "echo", "nap", "slow"}


def test_cost_of_a_recorded_sdk_server_names_the_tokenizer_and_prices_each_tool_and_its_results(tmp_path, sdk_python):
    db = tmp_path / "rec.db"
    chain = tee(db, sdk_python, tool("sdk_server.py"), name="sdk")
    done = run([sdk_python, tool("sdk_client.py"), "legacy", "sdk", "--", *chain], timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    text = cli("cost", "--db", str(db))
    assert text.returncode == 0, text.stderr.decode()
    lines = text.stdout.decode().splitlines()
    assert lines[0].startswith("tokens: o200k_base") or lines[0].startswith("tokens: bytes/4 estimate (an estimate")
    for name in TOOLS:
        assert any(line.split()[:2] == ["tool", name] and all(c.isdigit() for c in line.split()[2:]) for line in lines)

    figures = json.loads(cli("cost", "--db", str(db), "sdk", "--format", "json").stdout)
    (server,) = figures["servers"]
    assert {t["name"] for t in server["definitions"]["tools"]} == TOOLS
    assert all(t["tokens"] > t["model_tokens"] > 0 for t in server["definitions"]["tools"])
    echo = next(r for r in server["results"] if r["tool"] == "echo")
    assert echo["count"] == 1 and echo["tokens_max"] > 0

    report = json.loads(cli("analyze", "--db", str(db), "--format", "json").stdout)
    assert report["cost"]["tokenizer"] == figures["tokenizer"]
    assert [s["definitions"] for s in report["cost"]["servers"]] == [s["definitions"] for s in figures["servers"]]
    assert all(s["results"] == [] for s in report["cost"]["sessions"] + report["cost"]["servers"])

    import mcptap.data as mt

    table = mt.cost(str(db))
    assert table.attrs["tokenizer"] == figures["tokenizer"]
    tools = table[table["kind"] == "tool"].set_index("name")
    assert {t["name"]: t["tokens"] for t in server["definitions"]["tools"]} == tools["tokens"].to_dict()
