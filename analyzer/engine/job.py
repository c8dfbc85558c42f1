"""Sessions analysed one at a time over one reader and (when storing) one writer connection
(`Job`): the frames read FLUSH_FRAMES at a time and fed to a SessionAnalysis, its rows written in
transactions that let other writers in; and the same in memory, nothing stored
(`analyze_session`, for the transcript)."""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import time

from mcptap import __version__, store
from mcptap.analysis import revision
from mcptap.analysis.declared import wanted
from mcptap.analysis.messages import Message
from mcptap.analysis.session import SessionAnalysis
from mcptap.engine import declared_pass, joined as operations
from mcptap.engine.results import Seen, SessionResult
from mcptap.store import cells

FLUSH_FRAMES = 10_000
"""Frames analysed between writes of their rows (bounds memory and lock time on long sessions)."""

COLLECT_AFTER = 2_000_000
"""Objects made, at most, between two collections while the collector is paused."""

MAX_UNWRITTEN = 3 * FLUSH_FRAMES
"""Rows kept waiting, at most, while another writer holds the database (`_Job._write`)."""

ANALYSED_TABLES = ("sessions", "frames", "exchanges")
"""The tables an analysis reads (a wrong-typed cell among them is named: analyzer/store/cells.py)."""


class Job:
    """Analyses sessions one at a time over one reader and (when storing) one writer connection."""

    def __init__(self, db_path: str, fallback_revision, policy, store_it: bool, progress, cleared: bool = False,
                 declared: bool = False):
        """`cleared`: the sessions' earlier results are already gone. `declared`: each session's
        result keeps what its last listings declared (SessionResult.declared), for the cost."""
        self.declared = declared
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
            self.writer, self.reason = open_writer(db_path)

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
            self.unwritten = [r for r in self.unwritten if Message.of(r).session_id != sid]
            self.unwritten_findings = [f for f in self.unwritten_findings if f.session_id != sid]
            self.summaries = [s for s in self.summaries if s["id"] != sid]
            if self.writer is not None and sid not in self.clears:
                self.clears.append(sid)
            return SessionResult({"id": sid}, [], {}, 0, self.reason, failed=failure(exc))

    def _run(self, sid: str) -> SessionResult:
        analysis = new_analysis(self.reader, sid, self.fallback_revision, self.policy)
        self.wanted: list[int] = []  # the frames the session's definitions are read from
        self.calls: list[int] = []  # its tools/call requests
        findings: list[tuple] = []
        first = True
        count = 0
        seen = Seen()
        for chunk in chunks_of(self.frames, sid, analysis):
            seen.add(chunk)
            if gc.get_count()[0] > COLLECT_AFTER:
                gc.collect(0)  # cycles (batches) of a very long session, now and then
            count += len(chunk)
            if len(chunk) == FLUSH_FRAMES:
                self._take(sid, analysis, findings, first=first, last=False)
                first = False
                if self.progress is not None:
                    self.progress(FLUSH_FRAMES)
        analysis.end()
        early = analysis.take_rows()
        wanted(early, self.wanted, self.calls)
        kept: list | None = [] if self.declared else None
        extra = declared_pass.judge_session(self.frames, sid, self.policy, self.wanted, self.calls, kept)
        joined, methods = operations.judge_session(self.frames, sid, analysis.revision, self.policy,
                                                   operations.may_join(analysis))
        extra += joined
        analysis.method_stats.update(methods)  # joined operations count once, timed whole
        for finding in extra:
            analysis.severities[finding.severity] += 1
        summary = analysis.summary()
        summary["analyzed_at"] = time.time()  # one value: what is stored and what the report prints
        self._take(sid, analysis, findings, first=first, last=True, extra=extra, early=early, summary=summary)
        if self.progress is not None:
            self.progress(count % FLUSH_FRAMES)
        return SessionResult(summary, findings, analysis.method_stats, count, self.reason,
                             declared=kept[0] if kept else None, recorded=seen.figures())

    def finish(self, results: list[SessionResult]) -> None:
        """Store what is still waiting; a failure to is every session's reason."""
        if self.writer is not None and (self.unwritten or self.clears or self.summaries):
            self._write(wait=True)
        if self.reason is not None:
            for result in results:
                result.not_stored_reason = result.not_stored_reason or self.reason

    def _take(self, sid: str, analysis: SessionAnalysis, findings: list, *, first: bool, last: bool,
              extra: list = (), early: list | None = None, summary: dict | None = None) -> None:
        """The rows made since the last time (and `early`, rows taken before; `extra` findings: the
        session's definitions findings), stored once FLUSH_FRAMES of them wait (several small sessions share a transaction)."""
        rows, found = analysis.take_rows(), analysis.take_findings() + list(extra)
        wanted(rows, self.wanted, self.calls)
        if early:  # the rows taken already (`early`: their frames noted in `wanted`) go first
            rows = early + rows
        findings.extend(found)
        if self.writer is None:
            return
        self.unwritten.extend(rows)
        self.unwritten_findings.extend(found)
        if first and not self.cleared:
            self.clears.append(sid)
        if last:
            self.summaries.append(summary if summary is not None else analysis.summary())
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
                _begin_waiting(conn)
            elif not store.begin_write_now(conn):
                return
            for sid in self.clears:
                store.clear_analysis(conn, sid)
            store.insert_analysis_rows(conn, self.unwritten, self.unwritten_findings)
            for summary in self.summaries:
                store.insert_analysis_summary(conn, summary, summary.get("analyzed_at") or time.time(),
                                              f"mcptap {__version__}")
            store.commit(conn)
            self.unwritten, self.unwritten_findings, self.clears, self.summaries = [], [], [], []
        except (sqlite3.Error, OSError) as exc:
            self.reason = reason_of(exc)
            try:
                store.rollback(conn)
                conn.close()
            except sqlite3.Error:
                pass
            self.writer = None


WAIT_ROUNDS = 6
"""Busy timeouts a write that must happen waits out: the other writer is mostly this analysis'
other worker, whose commit (and checkpoint) a loaded machine can stretch past one timeout."""


def _begin_waiting(conn: sqlite3.Connection) -> None:
    """A write transaction begun, waiting out up to WAIT_ROUNDS busy timeouts before the lock is a failure."""
    for round_left in range(WAIT_ROUNDS - 1, -1, -1):
        try:
            store.begin_write(conn)
            return
        except sqlite3.OperationalError as exc:
            if round_left == 0 or "locked" not in str(exc) and "busy" not in str(exc):
                raise


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a session is analysed: what a session makes
    (rows, request records, keys) holds no reference cycles (see Msg.request), so the collector
    would only walk it again and again, a tenth of the analysis. The few cycles (batches) are
    collected once it is back on, or by `Job._run` after COLLECT_AFTER objects."""
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
                           transport=meta["transport"], exchanges=exchanges, security=True)


def chunks_of(reader: sqlite3.Connection, session_id: str, analysis: SessionAnalysis):
    """The session's frames fed to `analysis` FLUSH_FRAMES at a time; yields each chunk once fed
    (its rows are then ready to store)."""
    redacted = analysis.reads_security  # then each frame's redacted paths too, for the security rules
    if analysis.exchanges is not None:
        cursor = store.iter_http_frames(reader, session_id, redacted=redacted)
        while chunk := cursor.fetchmany(FLUSH_FRAMES):
            for row in chunk:
                analysis.http_frame(*row)
            yield chunk
    else:
        cursor = store.iter_raw_frames(reader, session_id, redacted=redacted)
        while chunk := cursor.fetchmany(FLUSH_FRAMES):
            analysis.feed(chunk)
            yield chunk


def analyze_session(reader: sqlite3.Connection, session_id: str, *, fallback_revision: str | None = None,
                    policy=None, finish: bool = True) -> tuple[dict, list, list]:
    """One session analysed in memory, nothing stored: (summary, Message rows, Finding rows).
    `finish=False`: the session is still being recorded, so what only its end can tell (a
    request never answered, the end rules) is not judged yet, and a request still waiting for
    its answer has no row."""
    analysis = new_analysis(reader, session_id, fallback_revision, policy)
    for _ in chunks_of(reader, session_id, analysis):
        pass
    if not finish:
        return analysis.summary(), [Message.of(row) for row in analysis.take_rows()], analysis.take_findings()
    analysis.end()
    joins = operations.may_join(analysis)
    extra, methods = operations.judge_session(reader, session_id, analysis.revision, policy, joins)
    rows = analysis.take_rows()
    seqs: list[int] = []
    calls: list[int] = []
    wanted(rows, seqs, calls)  # the definitions findings too, as `mcptap analyze` stores them
    extra += declared_pass.judge_session(reader, session_id, policy, seqs, calls)
    analysis.method_stats.update(methods)
    for finding in extra:
        analysis.severities[finding.severity] += 1
    summary = analysis.summary()
    summary["joins"] = joins  # the transcript's frames of joined operations (engine/joined.py frame_members)
    return summary, [Message.of(row) for row in rows], analysis.take_findings() + extra


def open_writer(db_path: str) -> tuple[sqlite3.Connection | None, str | None]:
    """A connection to write with, or why there is none."""
    try:
        return store.connect(db_path), None
    except (sqlite3.Error, OSError) as exc:
        return None, reason_of(exc)


def write_groups(conn: sqlite3.Connection) -> str | None:
    """Every registered finding code's group stored (`finding_groups`, which display filters read);
    None, or why it could not be."""
    from mcptap.analysis import rules

    try:
        store.write_finding_groups(conn, {code: r.group for code, r in rules.load().items()})
    except (sqlite3.Error, OSError) as exc:
        return reason_of(exc)
    return None


def failure(exc: BaseException) -> str:
    """An exception as the one line that says why a session was not analysed (a wrong-typed
    cell: its own message, naming the cell)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, cells.BadCell):
        return text
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def reason_of(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
