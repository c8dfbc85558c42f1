"""The display filter language (analyzer/store/filterlang.py) compiled to SQL over the store
(filtersql.py): every case of the shared corpus (tests/data/filter_corpus.json, which the report's
script runs too in tests/faces/test_viewer.py) selects its frames from the database the corpus
names, and every bad expression is refused with the column the corpus gives; mcptap.data takes it
(the commands: tests/faces/test_filter_cli.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mcptap.store import filterlang, filtersql
from tests.conftest import mcptap, run
from tests.support.inprocess import cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = json.loads((ROOT / "tests" / "data" / "filter_corpus.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("filter") / "corpus.db"
    assert cli("import", "--db", str(db), str(ROOT / CORPUS["database"])).returncode == 0
    assert cli("analyze", "--db", str(db), "--fail-on", "never").returncode == 0
    return db


@pytest.mark.parametrize("case", CORPUS["cases"], ids=lambda c: c["filter"])
def test_each_corpus_filter_selects_its_frames_through_sql(corpus_db, case):
    conn = sqlite3.connect(corpus_db)
    labels = dict(conn.execute("SELECT id, label FROM sessions"))
    got = [f"{labels[sid]}:{seq}" for sid, seq in filtersql.frames(conn, filterlang.parse(case["filter"]))]
    conn.close()
    assert got == case["frames"]


@pytest.mark.parametrize("case", CORPUS["errors"], ids=lambda c: c["filter"] or "(empty)")
def test_each_bad_corpus_filter_is_refused_at_its_column(case):
    with pytest.raises(filterlang.FilterError) as caught:
        filterlang.parse(case["filter"])
    assert caught.value.column == case["column"]
    assert str(caught.value).startswith(f"bad filter at column {case['column']}: ")


def test_the_corpus_selects_some_frames_and_not_all_and_uses_every_field():
    selections = [len(c["frames"]) for c in CORPUS["cases"]]
    assert min(selections) == 0 and 0 < sorted(selections)[len(selections) // 2] < 34
    text = " ".join(c["filter"] for c in CORPUS["cases"])
    assert all(field in text for field in filterlang.FIELDS)
    assert all(word in text for word in (" in {", " ~ ", "contains", " not ", "!", "||", "&&", "ms", "kB", "MB", "("))


def test_the_data_api_gives_the_rows_of_the_frames_a_filter_selects(corpus_db):
    from mcptap import data

    frames = data.frames(str(corpus_db), filter='params.name == "add"', columns=["seq", "raw"])
    assert list(frames["seq"]) == [9, 9] and all('"add"' in raw for raw in frames["raw"])
    msgs = data.messages(str(corpus_db), filter="latency > 30ms and dir == s2c")
    assert sorted(set(msgs["method"].astype(str))) == ["initialize", "tools/call"]
    assert list(data.findings(str(corpus_db), filter="seq == 4")["code"].astype(str)) == ["bad-jsonrpc-version"]
    assert data.frames(str(corpus_db), filter="size > 1GB").empty
    with pytest.raises(filterlang.FilterError):
        data.frames(str(corpus_db), filter="size > big")


def test_a_filter_that_needs_a_message_selects_the_same_frames_found_from_the_messages(corpus_db, monkeypatch):
    """filtersql.needs_message lets a filter be run from the messages that pass: for every corpus
    case the frames are those of the plain reading (each frame's message looked up)."""
    conn = sqlite3.connect(corpus_db)
    trees = [filterlang.parse(case["filter"]) for case in CORPUS["cases"]]
    fast = [list(filtersql.frames(conn, tree)) for tree in trees]
    monkeypatch.setattr(filtersql, "needs_message", lambda tree: False)
    plain = [list(filtersql.frames(conn, tree)) for tree in trees]
    conn.close()
    assert fast == plain
    monkeypatch.undo()
    needing = [case["filter"] for case, tree in zip(CORPUS["cases"], trees) if filtersql.needs_message(tree)]
    assert needing and len(needing) < len(trees)
    assert not filtersql.needs_message(filterlang.parse('method != "ping"'))
    assert not filtersql.needs_message(filterlang.parse('method == "ping" or dir == c2s'))
    assert filtersql.needs_message(filterlang.parse('dir == c2s and (latency > 1ms or kind in {request, error})'))


@pytest.mark.parametrize("case", [c for c in CORPUS["cases"] if c["frames"]][:8], ids=lambda c: c["filter"])
def test_a_sessions_first_frames_of_a_filter_are_the_head_of_its_frames_in_that_session(corpus_db, case):
    conn = sqlite3.connect(corpus_db)
    tree = filterlang.parse(case["filter"])
    every = list(filtersql.frames(conn, tree))
    sid = every[0][0]
    mine = [seq for s, seq in every if s == sid]
    assert filtersql.first(conn, tree, sid, 2) == mine[:2]
    assert filtersql.first(conn, tree, sid, len(mine) + 5) == mine
    conn.close()
