"""The analyzer's JSON report over a corpus of sessions (tests/golden/corpus/: every case of
tests/analysis/test_rules.py and its near neighbour, those over HTTP with their exchanges, and a
live demo recording) is exactly the committed one (tests/golden/expected/), analyzed from the file
and from a database it was imported into. A change of the report shows here as a diff to review;
when it is meant:

    pytest tests/analysis/test_golden.py --regenerate-golden

rewrites the expected files (and says so by failing, so that a regeneration is never silent)."""

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run
from tests.support.inprocess import cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CORPUS = sorted((GOLDEN / "corpus").glob("*.jsonl"))
VOLATILE = ("analyzed_at", "analyzed", "source")
"""Members whose value changes from run to run (the time of the analysis, and where the corpus
file is on this machine); masked wherever they appear."""
WHERE_STORED = ("stored", "not_stored_reason")
"""Members that say where the results went: the file's analysis stores none, the database's does."""


def masked(value):
    if isinstance(value, dict):
        return {k: "<masked>" if k in VOLATILE else masked(v) for k, v in value.items() if k not in WHERE_STORED}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def report(*args: str) -> dict:
    result = cli("analyze", *args, "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    return masked(json.loads(result.stdout))


def text(document: dict) -> str:
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_in_the_committed_report_every_rule_case_fires_its_code_and_no_neighbour_does():
    assert [p.name for p in CORPUS] == ["demo.jsonl", "rules.jsonl"]
    expected = json.loads((GOLDEN / "expected" / "rules.json").read_text(encoding="utf-8"))
    fired = {(f["session"], f["code"]) for f in expected["findings"]}
    cases = [s["id"] for s in expected["sessions"] if not s["id"].endswith("~near")]
    assert len(cases) >= 40
    assert [c for c in cases if (c, c) not in fired] == []
    assert [c for c in cases if (f"{c}~near", c) in fired] == []


@pytest.mark.parametrize("corpus", CORPUS, ids=lambda p: p.stem)
def test_the_json_report_of_each_corpus_file_is_the_committed_one(corpus, request, tmp_path):
    from_file = report(str(corpus))
    db = tmp_path / "golden.db"
    assert cli("import", "--db", str(db), str(corpus)).returncode == 0
    from_db = report("--db", str(db))
    assert from_db == from_file, "the file's analysis and the database's differ"
    assert sqlite3.connect(db).execute("SELECT count(*) FROM findings").fetchone()[0] == len(from_file["findings"])
    expected = GOLDEN / "expected" / f"{corpus.stem}.json"
    if request.config.getoption("--regenerate-golden"):
        expected.write_text(text(from_file), encoding="utf-8")
        pytest.fail(f"regenerated {expected.relative_to(GOLDEN.parent.parent)}: review the diff and commit it")
    assert text(from_file) == expected.read_text(encoding="utf-8")
