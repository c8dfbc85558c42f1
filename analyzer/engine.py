"""`mcptap analyze` as a library: read each session's frames from the store in order, feed them
to a SessionAnalysis (analyzer/analysis/session.py), and write the derived `messages`, `findings` and
`analyses` tables. Recorded tables are never changed.

Sessions are independent, so a large database is analysed by worker processes
(PARALLEL_MIN_FRAMES, `workers`) that write their rows into the database themselves, the
messages index dropped first and built once at the end. Rows are written in transactions of
about FLUSH_FRAMES frames, so other writers (a recorder, the other worker) wait milliseconds, not
the length of an analysis; a worker that finds the database busy goes on analysing and writes
later (`_Job._write`). A frame's envelope is read by the native scanner where it was built
(analyzer/_wirescan.c), with the same results as the exact parser. A database that cannot be
written still gets its
report: `Report.stored` says whether results were stored, and why not. A session that cannot be
analysed (a wrong-typed cell, a bug, its worker killed) never passes for one with findings: the
others are analysed and stored, then AnalysisFailed says which. Workers die with the process
that started them (`_worker_started`)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context

from mcptap import __version__, store

from mcptap.analysis import revision

from mcptap.store import cells
from mcptap.errors import MCPTapError
from mcptap.analysis.latency import LatencySketch
from mcptap.analysis.session import SessionAnalysis

FLUSH_FRAMES = 10_000
"""Frames analysed between writes of their rows (bounds memory and lock time on long sessions)."""

COLLECT_AFTER = 2_000_000
"""Objects made, at most, between two collections while the collector is paused."""

MAX_UNWRITTEN = 3 * FLUSH_FRAMES
"""Rows kept waiting, at most, while another writer holds the database (`_Job._write`)."""

PARALLEL_MIN_FRAMES = 50_000
"""Below this many frames, or with a single session, everything runs in this process."""

ANALYSED_TABLES = ("sessions", "frames", "exchanges")
"""The tables an analysis reads (a wrong-typed cell among them is named: analyzer/store/cells.py)."""

PARENT_CHECK_S = 0.5
"""How often a worker looks whether the process that started it is still there."""

PR_SET_PDEATHSIG = 1  # linux/prctl.h


class AnalysisFailed(MCPTapError):
    """Sessions could not be analysed (mcptap's bug, or a worker process killed): never a
    finding, always an error. The sessions that were analysed keep their stored results;
    `report` holds them."""

    def __init__(self, message: str, report: "Report"):
        super().__init__(message)
        self.report = report


@dataclass
class Report:
    sessions: list[dict] = field(default_factory=list)
    findings: list[tuple] = field(default_factory=list)
    methods: dict[str, dict] = field(default_factory=dict)  # per method: calls, errors, unanswered, latencies (a LatencySketch)
    stored: bool = False
    not_stored_reason: str | None = None
    db_path: str = ""


@dataclass
class SessionResult:
    summary: dict
    findings: list[tuple]
    methods: dict[str, dict]
    frames: int
    not_stored_reason: str | None = None
    failed: str | None = None  # why the session could not be analysed (then it has no results)


def analyze(db_path: str, *, session: str | None = None, fallback_revision: str | None = None, policy=None,
            store_results: bool = True, progress: Callable[[int], None] | None = None,
            workers: int | None = None, sessions: list[str] | None = None) -> Report:
    """`session`: one session named as users name it; `sessions`: these session ids (say, the
    ones just imported); neither: every session."""
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
    finally:
        reader.close()
    report = Report(db_path=db_path)
    if store_results:
        writer, report.not_stored_reason = _writer(db_path)  # schema up to date before any worker writes
        if writer is not None:
            writer.close()
    else:
        report.not_stored_reason = "not asked to"
    store_it = report.not_stored_reason is None
    n = _worker_count(workers, ids, sizes)
    results: dict[str, SessionResult] = {}
    if n <= 1:
        job = _Job(db_path, fallback_revision, policy, store_it, progress)
        try:
            for sid in ids:
                results[sid] = job.run_guarded(sid)
            job.finish(list(results.values()))
        finally:
            job.close()
    else:
        reason = _in_workers(db_path, ids, sizes, n, fallback_revision, policy, store_it, progress, results)
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
        _merge_methods(report.methods, result.methods)
        if result.not_stored_reason and report.not_stored_reason is None:
            report.not_stored_reason = result.not_stored_reason
    report.stored = report.not_stored_reason is None
    if failed:
        sid, why = next(iter(failed.items()))
        others = f"{len(failed) - 1} more, " if len(failed) > 1 else ""
        raise AnalysisFailed(f"session {sid} could not be analysed ({why}; {others}{len(report.sessions)} of "
                             f"{len(ids)} sessions analysed" + (", their results stored)" if report.stored else ")"),
                             report)
    return report


def _worker_count(workers: int | None, ids: list[str], sizes: dict[str, int]) -> int:
    if workers is not None:
        return max(1, min(workers, len(ids)))
    if len(ids) < 2 or sum(sizes.values()) < PARALLEL_MIN_FRAMES:
        return 1
    return max(1, min(os.cpu_count() or 1, len(ids)))


def _in_workers(db_path, ids, sizes, n, fallback_revision, policy, store_it, progress, results) -> str | None:
    """Sessions shared out to `n` worker processes, largest first. Each writes its sessions'
    rows into the database itself, in transactions of at most FLUSH_FRAMES frames: while one
    commits, the other goes on analysing (a write takes milliseconds, a flush's analysis far
    longer), so nothing is copied afterwards."""
    groups: list[list[str]] = [[] for _ in range(n)]
    loads = [0] * n
    for sid in sorted(ids, key=lambda s: -sizes[s]):
        i = loads.index(min(loads))
        groups[i].append(sid)
        loads[i] += sizes[sid]
    reason = _prepare(db_path, ids) if store_it else None
    store_it = store_it and reason is None  # not writable after all: the report all the same
    try:
        with ProcessPoolExecutor(n, mp_context=_pool_context(), initializer=_worker_started,
                                 initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(_run_group, db_path, group, store_it, fallback_revision, policy)
                       for group in groups]
            for future in as_completed(futures):
                try:
                    done = future.result()
                except Exception as exc:  # the worker died (killed, out of memory): its sessions failed
                    done = [SessionResult({"id": sid}, [], {}, 0, failed=_failure(exc)) for sid in
                            groups[futures.index(future)] if sid not in results]
                for result in done:
                    results[result.summary["id"]] = result
                    if result.not_stored_reason and reason is None:
                        reason = result.not_stored_reason
                    if progress is not None:
                        progress(result.frames)
    finally:
        if store_it:  # the index back whatever happened (`_prepare` dropped it)
            writer, why = _writer(db_path)
            try:
                if writer is not None:
                    store.ensure_message_indexes(writer)
            except (sqlite3.Error, OSError) as exc:
                why = _why(exc)
            finally:
                if writer is not None:
                    writer.close()
            reason = reason or why
    return reason


def _prepare(db_path: str, ids: list[str]) -> str | None:
    """Before the workers write: the sessions' earlier results deleted (while the index can find
    them) and the messages index dropped (`store.drop_message_index`). Why not, if not."""
    writer, reason = _writer(db_path)
    if writer is None:
        return reason
    try:
        store.clear_analyses(writer, ids)
        store.drop_message_index(writer)
        return None
    except (sqlite3.Error, OSError) as exc:
        return _why(exc)
    finally:
        writer.close()


def _pool_context():
    """Workers forked from this process where that is safe (Linux, no other thread running: a
    progress bar's thread could hold a lock the child would inherit), so that they start with
    the analyzer already imported (the method tables take a third of a second to build);
    spawned otherwise."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return get_context("fork")
    return get_context("spawn")


def _worker_started(parent: int) -> None:
    """A worker process dies with the process that started it: the kernel kills it when its
    parent goes (Linux, PR_SET_PDEATHSIG), and everywhere a thread of its own looks every
    PARENT_CHECK_S whether its parent is still the one that started it (a SIGKILLed `analyze`
    leaves no worker behind)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # gone already, before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="mcptap-parent-watch", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _failure(exc: BaseException) -> str:
    """An exception as the one line that says why a session was not analysed (a wrong-typed
    cell: its own message, naming the cell)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, cells.BadCell):
        return text
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _run_group(db_path: str, group: list[str], store_it: bool, fallback_revision, policy) -> list[SessionResult]:
    job = _Job(db_path, fallback_revision, policy, store_it, None, cleared=True)
    try:
        results, methods = [], {}
        for sid in group:  # the method statistics summed here: memory per method, not per session
            result = job.run_guarded(sid)
            _merge_methods(methods, result.methods)
            result.methods = {}
            results.append(result)
        if results:
            results[0].methods = methods
        job.finish(results)
        return results
    finally:
        job.close()


class _Job:
    """Analyses sessions one at a time over one reader and (when storing) one writer connection."""

    def __init__(self, db_path: str, fallback_revision, policy, store_it: bool, progress, cleared: bool = False):
        """`cleared`: the sessions' earlier results are already gone."""
        self.db_path = db_path
        self.fallback_revision = fallback_revision
        self.policy = policy
        self.progress = progress
        self.cleared = cleared
        self.unwritten: list = []  # message rows made but not yet stored
        self.unwritten_findings: list = []
        self.clears: list[str] = []  # sessions whose earlier results are still to be deleted
        self.summaries: list[dict] = []  # analyses rows still to be stored
        self.reader = store.open_existing(db_path)
        self.frames = store.open_existing(db_path)  # the million rows, on a connection of their own
        self.writer: sqlite3.Connection | None = None
        self.reason: str | None = None
        if store_it:
            self.writer, self.reason = _writer(db_path)

    def close(self) -> None:
        self.reader.close()
        self.frames.close()
        if self.writer is not None:
            self.writer.close()

    def run(self, sid: str) -> SessionResult:
        with collector_paused():
            return self._run(sid)

    def run_guarded(self, sid: str) -> SessionResult:
        """`run`, a failure given as the session's `failed` (a cell of the wrong type, named by
        cells.diagnosed; else mcptap's bug): its rows made so far are dropped and its earlier
        stored results cleared, and the other sessions go on."""
        try:
            with cells.diagnosed(self.reader, [sid], ANALYSED_TABLES):
                return self.run(sid)
        except Exception as exc:
            self.frames.close()  # its query was left part read: the next session gets a reader of its own
            self.frames = store.open_existing(self.db_path)
            self.unwritten = [r for r in self.unwritten if r[0] != sid]
            self.unwritten_findings = [f for f in self.unwritten_findings if f[0] != sid]
            self.summaries = [s for s in self.summaries if s["id"] != sid]
            if self.writer is not None and sid not in self.clears:
                self.clears.append(sid)
            return SessionResult({"id": sid}, [], {}, 0, self.reason, failed=_failure(exc))

    def _run(self, sid: str) -> SessionResult:
        analysis = new_analysis(self.reader, sid, self.fallback_revision, self.policy)
        findings: list[tuple] = []
        first = True
        count = 0
        for chunk in chunks_of(self.frames, sid, analysis):
            if gc.get_count()[0] > COLLECT_AFTER:
                gc.collect(0)  # cycles (batches) of a very long session, now and then
            count += len(chunk)
            if len(chunk) == FLUSH_FRAMES:
                self._take(sid, analysis, findings, first=first, last=False)
                first = False
                if self.progress is not None:
                    self.progress(FLUSH_FRAMES)
        analysis.end()
        self._take(sid, analysis, findings, first=first, last=True)
        if self.progress is not None:
            self.progress(count % FLUSH_FRAMES)
        return SessionResult(analysis.summary(), findings, analysis.method_stats, count, self.reason)

    def finish(self, results: list[SessionResult]) -> None:
        """Store what is still waiting; a failure to is every session's reason."""
        if self.writer is not None and (self.unwritten or self.clears or self.summaries):
            self._write(wait=True)
        if self.reason is not None:
            for result in results:
                result.not_stored_reason = result.not_stored_reason or self.reason

    def _take(self, sid: str, analysis: SessionAnalysis, findings: list, *, first: bool, last: bool) -> None:
        """The rows made since the last time, stored once FLUSH_FRAMES of them wait (several
        small sessions share a transaction)."""
        rows, found = analysis.take_rows(), analysis.take_findings()
        findings.extend(found)
        if self.writer is None:
            return
        self.unwritten.extend(rows)
        self.unwritten_findings.extend(found)
        if first and not self.cleared:
            self.clears.append(sid)
        if last:
            self.summaries.append(analysis.summary())
        if len(self.unwritten) >= FLUSH_FRAMES:
            self._write(wait=len(self.unwritten) >= MAX_UNWRITTEN)

    def _write(self, *, wait: bool) -> None:
        """One transaction with everything waiting. While another writer holds the database (the
        other worker, committing), nothing is written unless `wait`: the rows wait for the next
        time rather than the worker for the lock (SQLite's busy handler sleeps in steps of up to
        100 ms)."""
        conn = self.writer
        try:
            if wait:
                store.begin_write(conn)
            elif not store.begin_write_now(conn):
                return
            for sid in self.clears:
                store.clear_analysis(conn, sid)
            store.insert_analysis_rows(conn, self.unwritten, self.unwritten_findings)
            for summary in self.summaries:
                store.insert_analysis_summary(conn, summary, time.time(), f"mcptap {__version__}")
            store.commit(conn)
            self.unwritten, self.unwritten_findings, self.clears, self.summaries = [], [], [], []
        except (sqlite3.Error, OSError) as exc:
            self.reason = _why(exc)
            try:
                store.rollback(conn)
                conn.close()
            except sqlite3.Error:
                pass
            self.writer = None


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a session is analysed: what a session makes
    (rows, request records, keys) holds no reference cycles (see Msg.request), so the collector
    would only walk it again and again, a tenth of the analysis. The few cycles (batches) are
    collected once it is back on, or by `_Job._run` after COLLECT_AFTER objects."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def new_analysis(reader: sqlite3.Connection, session_id: str, fallback_revision: str | None = None,
                 policy=None) -> SessionAnalysis:
    """A SessionAnalysis set up for a stored session: its revision, transport, whether it ended,
    and for an HTTP session its exchanges."""
    meta = store.get_session(reader, session_id)
    exchanges = store.session_exchanges(reader, session_id) or None
    header = next((e["protocol_version"] for e in exchanges or () if e["protocol_version"]), None)
    rev = revision.detect(store.iter_raw_frames(reader, session_id), fallback_revision, header)
    return SessionAnalysis(session_id, revision=rev.revision, revision_source=rev.source,
                           stdio=meta["transport"] == "stdio", cut=store.cut_frames(reader, session_id),
                           ended=meta["ended_at"] is not None and meta["transport"] != "import", policy=policy,
                           transport=meta["transport"], exchanges=exchanges)


def chunks_of(reader: sqlite3.Connection, session_id: str, analysis: SessionAnalysis):
    """The session's frames fed to `analysis` FLUSH_FRAMES at a time; yields each chunk once fed
    (its rows are then ready to store)."""
    if analysis.exchanges is not None:
        cursor = store.iter_http_frames(reader, session_id)
        while chunk := cursor.fetchmany(FLUSH_FRAMES):
            for row in chunk:
                analysis.http_frame(*row)
            yield chunk
    else:
        cursor = store.iter_raw_frames(reader, session_id)
        while chunk := cursor.fetchmany(FLUSH_FRAMES):
            analysis.feed(chunk)
            yield chunk


def analyze_session(reader: sqlite3.Connection, session_id: str, *, fallback_revision: str | None = None,
                    policy=None) -> tuple[dict, list, list]:
    """One session analysed in memory, nothing stored: (summary, message rows, finding rows)."""
    analysis = new_analysis(reader, session_id, fallback_revision, policy)
    for _ in chunks_of(reader, session_id, analysis):
        pass
    analysis.end()
    return analysis.summary(), analysis.take_rows(), analysis.take_findings()


def _writer(db_path: str) -> tuple[sqlite3.Connection | None, str | None]:
    """A connection to write with, or why there is none."""
    try:
        return store.connect(db_path), None
    except (sqlite3.Error, OSError) as exc:
        return None, _why(exc)


def _merge_methods(total: dict, stats: dict) -> None:
    for method, s in stats.items():
        t = total.setdefault(method, {"calls": 0, "errors": 0, "unanswered": 0, "latencies": LatencySketch()})
        t["calls"] += s["calls"]
        t["errors"] += s["errors"]
        t["unanswered"] += s["unanswered"]
        t["latencies"].merge(s["latencies"])


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
