"""A generated million-frame recording of a thousand sessions (bench/analyze.py's generator: both
eras, 0.5% injected violations), exported to a Parquet dataset and analysed on Spark (local[2], a
real JVM), gives row for row the messages and findings `mcptap analyze --db` gives, and the same
report. Generated once into a temporary folder; the rows of both sides are compared as Arrow
tables sorted on every column. Takes minutes: the generation, the SQLite analysis and the Spark
run each take one or two on a quiet machine of two cores."""

import json
import sqlite3
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from tests.conftest import mcptap, run

ROOT = Path(__file__).resolve().parents[2]
FRAMES, SESSIONS = 1_000_000, 1_000
TABLES = {
    "messages": {"session_id": pa.string(), "frame_seq": pa.int64(), "idx": pa.int64(), "direction": pa.string(),
                 "kind": pa.string(), "id": pa.string(), "method": pa.string(), "paired_frame": pa.int64(),
                 "latency_s": pa.float64()},
    "findings": {"session_id": pa.string(), "frame_seq": pa.int64(), "idx": pa.int64(), "code": pa.string(),
                 "severity": pa.string(), "message": pa.string(), "related_frame": pa.int64()},
}
GENERATE = ("import sys; sys.path.insert(0, sys.argv[1]); from analyze import Generator; "
            "s = Generator(int(sys.argv[3]), 7, int(sys.argv[4])).write(sys.argv[2]); "
            "print(s['frames'], s['sessions'])")


def sqlite_table(db: Path, table: str) -> pa.Table:
    """The table's rows read with sqlite3 (not the product's readers) into Arrow, in chunks."""
    schema = pa.schema(list(TABLES[table].items()))
    conn = sqlite3.connect(db)
    try:
        cursor = conn.execute(f"SELECT {', '.join(schema.names)} FROM {table}")
        batches = []
        while chunk := cursor.fetchmany(200_000):
            columns = list(zip(*chunk))
            batches.append(pa.record_batch([pa.array(c, type=t) for c, t in zip(columns, schema.types)], schema=schema))
    finally:
        conn.close()
    return pa.Table.from_batches(batches, schema=schema)


def dataset_table(folder: Path, table: str) -> pa.Table:
    names = list(TABLES[table])
    return ds.dataset(folder / table, partitioning="hive").to_table(columns=names).cast(
        pa.schema(list(TABLES[table].items())))


def ordered(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names]).combine_chunks()


def test_a_generated_million_frames_of_a_thousand_sessions_analysed_on_spark_give_exactly_what_analyze_db_gives(
        tmp_path):
    db = tmp_path / "generated.db"
    done = run([sys.executable, "-c", GENERATE, str(ROOT / "bench"), str(db), str(FRAMES), str(SESSIONS)],
               timeout=1800)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.split() == [str(FRAMES).encode(), str(SESSIONS).encode()]
    folder = tmp_path / "ds"
    done = run(mcptap("export", "--format", "parquet", "-o", str(folder), str(db)), timeout=1800)
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    done = run(mcptap("analyze", "--db", str(db), "--format", "json", "--fail-on", "never"), timeout=1800)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    want_report = json.loads(done.stdout)
    done = run(mcptap("analyze", str(folder), "--engine", "spark", "--master", "local[2]", "--format", "json",
                      "--fail-on", "never"), timeout=3600)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report = json.loads(done.stdout)

    for table in TABLES:
        want, got = ordered(sqlite_table(db, table)), ordered(dataset_table(folder, table))
        assert got.num_rows == want.num_rows, table
        assert got.equals(want), table
    messages = sqlite_table(db, "messages")
    assert messages.num_rows > FRAMES and pc.count_distinct(messages.column("session_id")).as_py() == SESSIONS
    for key in ("findings", "methods"):
        assert report[key] == want_report[key], key
    assert [s["id"] for s in report["sessions"]] == [s["id"] for s in want_report["sessions"]]
