"""`mcptap analyze DATASET`: the sessions of a Parquet dataset (store/dataset.py) analysed by the
very function `mcptap analyze --db` runs (`engine.analyze`): a group of sessions' rows of every
recorded table are put into a private SQLite file, analysed there, and their `messages`,
`findings` and `analyses` rows written back into the dataset. `--engine local`: groups in worker
processes on this machine; `--engine spark`: groups on Spark's executors (engine/spark.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from mcptap import store
from mcptap.engine import AnalysisFailed, Report, analyze
from mcptap.engine.results import merge_methods
from mcptap.store import dataset, tablecopy

GROUP_FRAMES = 200_000
"""Frames to a group of sessions analysed together (one private SQLite file)."""


def analyze_tables(tables: dict, *, fallback_revision: str | None = None, policy=None) -> tuple[dict, Report]:
    """Sessions given as Arrow tables of the recorded tables (tablecopy's columns), analysed by
    `engine.analyze` in a private SQLite file: the derived tables' rows as Arrow tables, and
    the Report (its findings, summaries and method statistics) as `mcptap analyze` makes it."""
    ids = [sid for sid in tables["sessions"].column("id").to_pylist()]
    with tempfile.TemporaryDirectory(prefix="mcptap-fleet-") as folder:
        db = os.path.join(folder, "group.db")
        conn = store.connect(db)
        try:
            with store.write_transaction(conn):
                for table in tablecopy.RECORDED:
                    if table in tables:
                        tablecopy.load(conn, table, tables[table])
        finally:
            conn.close()
        try:
            report = analyze(db, sessions=ids, fallback_revision=fallback_revision, policy=policy, workers=1)
        except AnalysisFailed as exc:
            raise AnalysisFailed(str(exc).replace(db, "the dataset"), exc.report) from None
        conn = store.open_existing(db)
        try:
            derived = {table: _gathered(conn, table, ids) for table in tablecopy.DERIVED}
        finally:
            conn.close()
    report.db_path = ""
    return derived, report


def _gathered(conn, table: str, ids: Sequence[str]):
    import pyarrow as pa

    batches = [b for sid in ids for b in tablecopy.session_batches(conn, table, sid)]
    return pa.Table.from_batches(batches, schema=tablecopy.arrow_schema(table))


def groups_of(sessions: list[dict], frames_per_group: int = GROUP_FRAMES) -> list[list[str]]:
    """Sessions in groups of about `frames_per_group` frames, in start order."""
    groups: list[list[str]] = []
    load = frames_per_group
    for s in sessions:
        if load >= frames_per_group:
            groups.append([])
            load = 0
        groups[-1].append(s["id"])
        load += s["frames"]
    return groups


def merge_reports(root: str, order: Sequence[str], reports: Sequence[Report]) -> Report:
    """One Report of the groups' reports, as `engine.analyze` gives it for the whole dataset: the
    sessions in `order` (start order), each session's findings in the order they were found."""
    rank = {sid: i for i, sid in enumerate(order)}
    total = Report(db_path=str(root), stored=True)
    for part in reports:
        total.sessions.extend(part.sessions)
        total.findings.extend(part.findings)
        merge_methods(total.methods, part.methods)
    total.sessions.sort(key=lambda s: rank[s["id"]])
    total.findings = [f for _, _, f in sorted((rank[f.session_id], i, f) for i, f in enumerate(total.findings))]
    return total


def place(root, derived: dict, days: dict[str, str]) -> list[tuple[str, str, str, list[str]]]:
    """The derived tables' rows of analysed sessions written as new parts of the dataset, one per
    table and day: (table, day, part path, session ids) of each (their older rows still there)."""
    import pyarrow.compute as pc

    by_day: dict[str, list[str]] = {}
    for sid, day in days.items():
        by_day.setdefault(day, []).append(sid)
    placed = []
    for table in tablecopy.DERIVED:
        rows = derived[table]
        for day, ids in sorted(by_day.items()):
            part = dataset.PartWriter(root, table, day)
            try:
                for batch in rows.filter(pc.is_in(rows.column("session_id"), value_set=dataset.strings(ids))).to_batches():
                    part.write(batch)
                path = part.commit()
            except BaseException:
                part.abandon()
                raise
            placed.append((table, day, str(path) if path else "", ids))
    return placed


def settle(root, placed: Sequence[tuple[str, str, str, list[str]]]) -> None:
    """The analysed sessions' older derived rows gone, once every new part is in place."""
    from pathlib import Path

    new = [Path(path) for _, _, path, _ in placed if path]
    for table, day, _, ids in placed:
        dataset.drop_sessions(root, table, day, ids, keep=new)


def group_job(root: str, ids: list[str], fallback_revision, policy) -> tuple[list, Report]:
    """A group of the dataset's sessions analysed and their derived rows placed (a worker's job)."""
    tables = {table: dataset.read(dataset.check(root), table, ids) for table in tablecopy.RECORDED}
    return analyse_and_place(root, tables, fallback_revision, policy)


def analyse_and_place(root, tables: dict, fallback_revision, policy) -> tuple[list, Report]:
    """Sessions' recorded tables (with each row's `day`) analysed, their derived rows placed."""
    sessions = tables["sessions"]
    days = dict(zip(sessions.column("id").to_pylist(), sessions.column("day").to_pylist()))
    plain = {table: data.drop_columns([c for c in data.column_names if c not in dict(tablecopy.COLUMNS[table])])
             for table, data in tables.items()}
    derived, report = analyze_tables(plain, fallback_revision=fallback_revision, policy=policy)
    return place(root, derived, days), report


def analyze_dataset(path: str, *, engine: str = "local", master: str | None = None, workers: int | None = None,
                    fallback_revision: str | None = None, policy=None,
                    progress: Callable[[int], None] | None = None) -> Report:
    """Every session of the dataset analysed (`engine`: local worker processes, or Spark at
    `master`), its derived rows written back in place of earlier ones; the Report of them all."""
    root = dataset.check(path)
    with dataset.locked(root):
        dataset.verify(root, tablecopy.RECORDED + tablecopy.DERIVED)
        sessions = dataset.sessions(root)
        for table in ("sessions", *tablecopy.DERIVED):  # every folder the analysis will write, held inside the dataset
            for day in {s["day"] for s in sessions}:
                dataset.partition(root, table, day)
        if engine == "spark":
            from mcptap.engine import spark

            results = spark.run(root, master or "local[*]", sum(s["frames"] for s in sessions), GROUP_FRAMES,
                                analyse_and_place, fallback_revision, policy)
        else:
            results = _local(root, sessions, workers, fallback_revision, policy, progress)
        settle(root, [p for placed, _ in results for p in placed])
    return merge_reports(str(root), [s["id"] for s in sessions], [report for _, report in results])


def _local(root, sessions: list[dict], workers: int | None, fallback_revision, policy, progress) -> list:
    groups = groups_of(sessions)
    sizes = {s["id"]: s["frames"] for s in sessions}
    n = max(1, min(workers or os.cpu_count() or 1, len(groups)))
    results = []
    if n == 1:
        for ids in groups:
            results.append(group_job(str(root), ids, fallback_revision, policy))
            if progress is not None:
                progress(sum(sizes[sid] for sid in ids))
        return results
    with ProcessPoolExecutor(n, mp_context=get_context("forkserver")) as pool:
        futures = [(ids, pool.submit(group_job, str(root), ids, fallback_revision, policy)) for ids in groups]
        for ids, future in futures:
            results.append(future.result())
            if progress is not None:
                progress(sum(sizes[sid] for sid in ids))
    return results
