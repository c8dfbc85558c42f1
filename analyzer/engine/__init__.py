"""`mcptap analyze` as a library: read each session's frames from the store in order, feed them
to a SessionAnalysis (analyzer/analysis/session.py), and write the derived `messages`, `findings` and
`analyses` tables. Recorded tables are never changed.

Sessions are independent, so a large database is analysed by worker processes
(PARALLEL_MIN_FRAMES, `workers`) that write their rows into the database themselves, the
messages index dropped first and built once at the end. Rows are written in transactions of
about FLUSH_FRAMES frames, so other writers (a recorder, the other worker) wait milliseconds, not
the length of an analysis; a worker that finds the database busy goes on analysing and writes
later (`job.Job._write`). A frame's envelope is read by the native scanner where it was built
(analyzer/_wirescan.c), with the same results as the exact parser. A database that cannot be
written still gets its
report: `Report.stored` says whether results were stored, and why not. A session that cannot be
analysed (a wrong-typed cell, a bug, its worker killed) never passes for one with findings: the
others are analysed and stored, then AnalysisFailed says which. Workers die with the process
that started them (`workers._worker_started`).

In parts: job (sessions read, analysed and their rows written, one at a time), workers (the
worker processes), results (the Report, and what each session gives)."""

from __future__ import annotations

import time
from collections.abc import Callable

from mcptap import store
from mcptap.engine import declared_pass, security
from mcptap.engine.job import (FLUSH_FRAMES, Job, analyze_session, chunks_of, new_analysis, open_writer,
                               write_groups)
from mcptap.engine.results import AnalysisFailed, Report, SessionResult, merge_methods
from mcptap.engine.workers import PARALLEL_MIN_FRAMES, in_workers, worker_count
from mcptap.store import cells

__all__ = ["FLUSH_FRAMES", "PARALLEL_MIN_FRAMES", "AnalysisFailed", "Report", "SessionResult", "analyze",
           "analyze_session", "chunks_of", "new_analysis"]


def analyze(db_path: str, *, session: str | None = None, fallback_revision: str | None = None, policy=None,
            store_results: bool = True, progress: Callable[[int], None] | None = None,
            workers: int | None = None, sessions: list[str] | None = None, cost: bool = False) -> Report:
    """`session`: one session named as users name it; `sessions`: these session ids (say, the
    ones just imported); neither: every session. `cost`: the report's `cost` too (what the
    servers' definitions cost in a model's context: engine/declared_pass.py `cost_report`), from
    the definitions the analysis read, not read again."""
    started = time.time()
    reader = store.open_existing(db_path)
    try:
        if sessions is not None:
            ids = list(sessions)
        elif session:
            ids = [store.resolve_session(reader, session)]
        else:
            ids = store.session_ids(reader)
        cells.check_cheap(reader, ids if sessions is not None or session else None)
        counts = store.frames_per_session(reader)
        sizes = {sid: counts.get(sid, 0) for sid in ids}
        policy = security.prepared(reader, ids, policy)  # which servers declare which tools, across the sessions
    finally:
        reader.close()
    report = Report(db_path=db_path, started_at=started)
    if store_results:
        writer, report.not_stored_reason = open_writer(db_path)  # schema up to date before any worker writes
        if writer is not None:
            report.not_stored_reason = write_groups(writer)
            writer.close()
    else:
        report.not_stored_reason = "not asked to"
    store_it = report.not_stored_reason is None
    n = worker_count(workers, ids, sizes)
    results: dict[str, SessionResult] = {}
    if n <= 1:
        job = Job(db_path, fallback_revision, policy, store_it, progress, declared=cost)
        try:
            for sid in ids:
                results[sid] = job.run_guarded(sid)
            job.finish(list(results.values()))
        finally:
            job.close()
    else:
        reason = in_workers(db_path, ids, sizes, n, fallback_revision, policy, store_it, progress, results, cost)
        if reason is not None and report.not_stored_reason is None:
            report.not_stored_reason = reason
    failed = {sid: (results[sid].failed if sid in results else None) for sid in ids}
    failed = {sid: why or "its worker process ended before it was analysed" for sid, why in failed.items()
              if why is not None or sid not in results}
    for sid in ids:
        if sid in failed:
            continue
        result = results[sid]
        report.sessions.append(result.summary)
        report.findings.extend(result.findings)
        merge_methods(report.methods, result.methods)
        if result.recorded is not None:
            report.recorded[sid] = result.recorded
        if result.not_stored_reason and report.not_stored_reason is None:
            report.not_stored_reason = result.not_stored_reason
    report.stored = report.not_stored_reason is None
    if cost:
        report.cost = declared_pass.cost_of(_taken_declared(results, [s["id"] for s in report.sessions]))
    report.ended_at = time.time()
    if failed:
        sid, why = next(iter(failed.items()))
        others = f"{len(failed) - 1} more, " if len(failed) > 1 else ""
        raise AnalysisFailed(f"session {sid} could not be analysed ({why}; {others}{len(report.sessions)} of "
                             f"{len(ids)} sessions analysed" + (", their results stored)" if report.stored else ")"),
                             report)
    return report


def _taken_declared(results: dict[str, SessionResult], ids: list[str]):
    """Each session's kept definitions, in `ids` order, let go of as they are handed over."""
    for sid in ids:
        found, results[sid].declared = results[sid].declared, None
        if found is not None:
            yield found
