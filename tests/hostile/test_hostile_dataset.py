"""A hostile Parquet dataset: partition names that pyarrow and Spark decode to `../..`, a table
folder that is a link to another dataset, a damaged part and a part whose `seq` is text. Real
datasets (the golden corpus exported, in-process), real `mcptap analyze DATASET` processes on the local
engine and on Spark (local[1], a real JVM): one line, exit 2, and not a byte changed outside."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import TESTS, mcptap, run
from tests.support.inprocess import cli

DAY = "2026-12-01"  # the day the golden corpus's newest sessions started


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory) -> Path:
    """The golden corpus imported and analysed (the dataset carries derived rows to drop)."""
    db = tmp_path_factory.mktemp("corpus") / "corpus.db"
    done = cli("import", "--db", str(db), *map(str, sorted((TESTS / "golden" / "corpus").iterdir())))
    assert done.returncode == 0, done.stderr.decode()
    assert cli("analyze", "--db", str(db), "--fail-on", "never").returncode == 0
    return db


def exported(db: Path, folder: Path) -> Path:
    done = cli("export", "--format", "parquet", "-o", str(folder), str(db))
    assert done.returncode == 0, done.stderr.decode()
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` by its path, with the digest of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def refused(folder: Path, engine: str) -> str:
    argv = ["--engine", "spark", "--master", "local[1]"] if engine == "spark" else ["--engine", "local", "--jobs", "1"]
    done = run(mcptap("analyze", str(folder), *argv, "--fail-on", "never"), timeout=600)
    err = done.stderr.decode()
    lines = [line for line in err.splitlines() if line.startswith("mcptap:") or "Traceback" in line]
    assert done.returncode == 2, err[-3000:]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    return lines[0]


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_partition_named_dot_dot_writes_nothing_outside_the_dataset(corpus_db, tmp_path, engine):
    hostile = exported(corpus_db, tmp_path / "hostile")
    victim = exported(corpus_db, tmp_path / "victim")  # next door, the same sessions
    escape = "..%2F..%2F..%2F..%2Fvictim%2Fmessages%2Fday%3D" + DAY  # decoded: ../../../../victim/messages/day=...
    (hostile / "sessions" / f"day={DAY}").rename(hostile / "sessions" / f"day={escape}")
    before = snapshot(tmp_path)
    said = refused(hostile, engine)
    assert "day=" in said and "nothing was written" in said
    assert snapshot(tmp_path) == before
    assert not any(p.name == "day=.." for p in hostile.rglob("*"))


def test_a_table_folder_linked_to_another_dataset_is_not_written_through(corpus_db, tmp_path):
    hostile = exported(corpus_db, tmp_path / "hostile")
    victim = exported(corpus_db, tmp_path / "victim")
    for table in ("messages", "findings"):
        os.rename(hostile / table, tmp_path / f"gone-{table}")
        (hostile / table).symlink_to(victim / table, target_is_directory=True)
    before = snapshot(victim)
    assert "outside the dataset" in refused(hostile, "local")
    assert snapshot(victim) == before


def damage(folder: Path, how: str) -> None:
    part = sorted((folder / "frames" / f"day={DAY}").glob("part-*.parquet"))[0]
    if how == "damaged":
        part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
        return
    table = pq.read_table(part)
    at = table.schema.get_field_index("seq")
    table = table.set_column(at, "seq", pa.array([f"x{n}" for n in table.column("seq").to_pylist()]))
    pq.write_table(table, part)


@pytest.mark.parametrize("how, engine", [("damaged", "local"), ("text seq", "local"), ("text seq", "spark")])
def test_a_damaged_part_or_a_text_seq_is_refused_in_one_line(corpus_db, tmp_path, how, engine):
    folder = exported(corpus_db, tmp_path / "ds")
    damage(folder, how)
    before = snapshot(folder)
    said = refused(folder, engine)
    assert "is damaged" in said and "frames" in said
    assert {k: v for k, v in snapshot(folder).items() if k != "_mcptap.lock"} == \
        {k: v for k, v in before.items() if k != "_mcptap.lock"}


def test_the_pandas_api_names_a_damaged_part_in_one_line(corpus_db, tmp_path):
    import mcptap.data as mt
    from mcptap.store.dataset import DatasetError

    folder = exported(corpus_db, tmp_path / "ds")
    damage(folder, "text seq")
    with pytest.raises(DatasetError, match="is damaged"):
        mt.frames(folder)
