"""`show`, `export` and `analyze` take a display filter (docs/filters.md): only the frames it
selects, or the findings on them; a bad filter is one line naming its column and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import mcptap
from tests.support.inprocess import cli

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"


def test_show_export_and_analyze_take_a_filter_and_a_bad_one_is_one_line_and_exit_2(tmp_path):
    db = tmp_path / "filter.db"
    assert cli("import", "--db", str(db), str(CORPUS)).returncode == 0  # analysed by the first filter
    shown = cli("show", "--db", str(db), "demo-http", "--filter", 'method == "tools/call" and dir == c2s',
                       "--format", "jsonl")
    assert shown.returncode == 0
    frames = [json.loads(line) for line in shown.stdout.decode().splitlines()][1:]
    assert [f["seq"] for f in frames] == [7, 9, 11] and all(f["record"] == "frame" for f in frames)
    exported = cli("export", "--db", str(db), "--filter", "finding")
    records = [json.loads(line) for line in exported.stdout.decode().splitlines()]
    assert [(r["session"][:13], r["seq"]) for r in records if "raw" in r and r.get("record") is None] == [
        ("01a23348-5c71", 2), ("01a23348-6563", 4)]
    analysed = cli("analyze", "--db", str(db), "--filter", "seq == 4", "--format", "json")
    assert [(f["code"], f["frame"]) for f in json.loads(analysed.stdout)["findings"]] == [("bad-jsonrpc-version", 4)]
    for command in (("show", "demo"), ("export",), ("analyze",)):
        bad = cli(*command, "--db", str(db), "--filter", 'latency > "slow"')
        assert bad.returncode == 2 and bad.stdout == b""
        assert bad.stderr.decode().splitlines() == [
            "mcptap: error: bad filter at column 11: latency needs a number, not 'slow'"]
