"""Parquet datasets and the fleet engines, on real traffic: the real `mcp` SDK's client and server
through the tee (both eras), the demo's live stdio and HTTP recordings, and the golden corpus
imported. The dataset holds every recorded byte; `mcptap analyze DATASET` with --engine local
and --engine spark (Spark local[2], a real JVM) gives row for row what `mcptap analyze --db` gives."""

import json
import os
import sqlite3
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from mcptap import store
from tests.conftest import TESTS, copy_database, mcptap, rows, run, tee, tool
from tests.support.inprocess import cli

MESSAGES = "session_id, frame_seq, idx, direction, kind, id, method, paired_frame, latency_s"
FINDINGS = "session_id, frame_seq, idx, code, severity, message, related_frame"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, sdk_python) -> Path:
    """A database of real sessions, analysed nowhere yet."""
    folder = tmp_path_factory.mktemp("fleet")
    db = folder / "real.db"
    for mode in ("legacy", "auto"):
        done = run([sdk_python, tool("sdk_client.py"), mode, "sdk", "--",
                    *tee(db, sdk_python, tool("sdk_server.py"), name=f"sdk-{mode}")], timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    demo = run(mcptap("demo", "--db", str(db)), timeout=180, cwd=folder)
    assert demo.returncode == 0, demo.stderr.decode()[-2000:]
    done = cli("import", "--db", str(db), *map(str, sorted((TESTS / "golden" / "corpus").iterdir())))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM messages")
    conn.execute("DELETE FROM findings")
    conn.execute("DELETE FROM analyses")
    conn.commit()
    conn.close()
    return db


def sorted_rows(db: Path, table: str, columns: str) -> list:
    return sorted(map(repr, rows(db, f"SELECT {columns} FROM {table}")))


def dataset_rows(folder: Path, table: str, columns: str) -> list:
    names = [c.strip() for c in columns.split(",")]
    table = ds.dataset(folder / table, partitioning="hive").to_table(columns=names)
    return sorted(repr(tuple(r[n] for n in names)) for r in table.to_pylist())


def exported(db: Path, folder: Path, *more: str) -> Path:
    done = cli("export", "--format", "parquet", "-o", str(folder), *more, str(db), timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return folder


def test_a_parquet_export_holds_every_frame_with_exactly_the_bytes_sqlite_holds(recorded, tmp_path):
    folder = exported(recorded, tmp_path / "ds")
    columns = "session_id, seq, ts, direction, CAST(raw AS BLOB), size, incomplete"
    want = sorted_rows(recorded, "frames", columns)
    got = dataset_rows(folder, "frames", columns.replace("CAST(raw AS BLOB)", "raw"))
    assert got == want and len(want) > 500
    assert dataset_rows(folder, "stderr_lines", "session_id, seq, raw") == sorted_rows(
        recorded, "stderr_lines", "session_id, seq, CAST(raw AS BLOB)")
    assert dataset_rows(folder, "exchanges", "id, session_id, status, url") == sorted_rows(
        recorded, "exchanges", "id, session_id, status, url")
    sessions = ds.dataset(folder / "sessions", partitioning="hive").to_table().to_pylist()
    assert sorted(s["id"] for s in sessions) == [r.strip("'(),") for r in sorted_rows(recorded, "sessions", "id")]
    assert {s["transport"] for s in sessions} >= {"stdio", "http"} and len(sessions) > 60
    assert all(part.parent.name.startswith("day=20") for part in (folder / "frames").rglob("*.parquet"))


def test_exporting_a_session_again_replaces_its_rows_and_many_databases_share_one_dataset(recorded, tmp_path):
    other = copy_database(recorded, tmp_path / "other.db")
    conn = sqlite3.connect(other)  # another host: the same sessions under other ids
    for (sid,) in conn.execute("SELECT id FROM sessions").fetchall():
        for table, key in (("sessions", "id"), ("frames", "session_id"), ("stderr_lines", "session_id"),
                           ("exchanges", "session_id")):
            conn.execute(f"UPDATE {table} SET {key} = ? WHERE {key} = ?", ("h2-" + sid, sid))
    conn.commit()
    conn.close()
    folder = exported(recorded, tmp_path / "ds")
    exported(recorded, folder)
    done = cli("export", "--format", "parquet", "-o", str(folder), str(recorded), str(other), timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    frames = sorted_rows(recorded, "frames", "session_id, seq")
    assert len(dataset_rows(folder, "frames", "session_id, seq")) == 2 * len(frames)


def test_analysing_the_dataset_on_spark_and_locally_gives_exactly_what_analyze_db_gives(recorded, tmp_path):
    db = copy_database(recorded, tmp_path / "db.db")
    folder = exported(db, tmp_path / "ds")
    done = cli("analyze", "--db", str(db), "--format", "json", "--fail-on", "never")
    assert done.returncode == 0, done.stderr.decode()
    want_report = json.loads(done.stdout)
    want = {t: sorted_rows(db, t, c) for t, c in (("messages", MESSAGES), ("findings", FINDINGS))}
    assert want["findings"] and want["messages"]
    for engine in (["--engine", "spark", "--master", "local[2]"], ["--engine", "local", "--jobs", "2"]):
        done = run(mcptap("analyze", str(folder), *engine, "--format", "json", "--fail-on", "never"), timeout=600)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        got = {t: dataset_rows(folder, t, c) for t, c in (("messages", MESSAGES), ("findings", FINDINGS))}
        assert got == want, engine
        report = json.loads(done.stdout)
        for key in ("findings", "methods"):
            assert report[key] == want_report[key], (engine, key)
        assert [s["id"] for s in report["sessions"]] == [s["id"] for s in want_report["sessions"]]


NOT_DATASETS = [
    (lambda p: (p.mkdir(), (p / "notes.txt").write_text("x", encoding="utf-8")), "is not an mcptap dataset"),
    (lambda p: p.write_text("x", encoding="utf-8"), "is not a folder"),
    (lambda p: (p.mkdir(), (p / "_mcptap.json").write_text('{"format": "mcptap-parquet", "version": 99}')),
     "written by a newer mcptap"),
    (lambda p: (p.mkdir(), (p / "_mcptap.json").write_text('{"format": "something else"}')),
     "does not describe an mcptap dataset"),
]


@pytest.mark.parametrize("make, said", NOT_DATASETS)
@pytest.mark.parametrize("command", ["analyze --engine local", "analyze --engine spark", "export --format parquet -o",
                                     "pandas"])
def test_what_is_not_a_dataset_is_refused_in_one_line(tmp_path, make, said, command):
    path = tmp_path / "ds"
    make(path)
    if command == "pandas":
        import mcptap.data as mt
        from mcptap.store.dataset import DatasetError

        if (path / "_mcptap.json").exists():  # without its marker, a path is read as a SQLite file
            with pytest.raises(DatasetError, match=said):
                mt.findings(path)
        return
    if command.startswith("export"):
        db = tmp_path / "empty.db"
        store.connect(db).close()
        argv = mcptap(*command.split(), str(path), str(db))
    else:
        argv = mcptap("analyze", str(path), *command.split()[1:])
    done = run(argv, timeout=120)
    assert done.returncode == 2, done.stderr.decode()
    assert said in done.stderr.decode() and len(done.stderr.decode().strip().splitlines()) == 1


@pytest.mark.parametrize("nowhere", ["PATH", "JAVA_HOME"])
def test_spark_without_a_java_runtime_is_refused_in_one_line(recorded, tmp_path, nowhere):
    folder = exported(recorded, tmp_path / "ds")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env[nowhere] = str(tmp_path / "nothing")  # no java there (the interpreter is named by its path)
    done = run(mcptap("analyze", str(folder), "--engine", "spark"), env=env)
    assert done.returncode == 2, done.stderr.decode()
    assert "Java runtime" in done.stderr.decode() and len(done.stderr.decode().strip().splitlines()) == 1


def test_the_pandas_api_reads_a_dataset_as_it_reads_the_database(recorded, tmp_path):
    import mcptap.data as mt

    db = copy_database(recorded, tmp_path / "db.db")
    assert cli("analyze", "--db", str(db), "--fail-on", "never").returncode == 0
    folder = exported(db, tmp_path / "ds")  # with the analysis's tables

    def same(a, b, keys):
        a, b = (f.astype(str).replace({"nan": "<NA>", "NaT": "<NA>"}).sort_values(keys).reset_index(drop=True)
                for f in (a, b))
        return list(a.columns) == list(b.columns) and a.equals(b)

    assert same(mt.findings(db), mt.findings(folder), ["session_id", "frame_seq", "code", "message"])
    assert same(mt.findings(db, severity="error", code="parse-error"),
                mt.findings(folder, severity="error", code="parse-error"), ["session_id", "frame_seq"])
    columns = ["session_id", "frame_seq", "idx", "direction", "kind", "method", "paired_frame", "latency_s"]
    assert same(mt.messages(db, columns=columns), mt.messages(folder, columns=columns),
                ["session_id", "frame_seq", "idx"])
    assert same(mt.frames(db, session="sdk-auto"), mt.frames(folder, session="sdk-auto"), ["seq"])
    assert list(mt.sessions(folder)["id"]) == list(mt.sessions(db)["id"])
    assert len(mt.exchanges(folder)) == len(mt.exchanges(db)) > 0
    with pytest.raises(ValueError, match="display filter"):
        mt.frames(folder, filter="kind == request")
