"""`mcptap analyze` as a library: read each session's frames from the store in order, feed them
to a SessionAnalysis (analyzer/session.py), and write the derived `messages`, `findings` and
`analyses` tables, one transaction per session (recorders writing the same file wait at most
that long). Recorded tables are never changed. A database that cannot be written still gets
its report: `Report.stored` says whether results were stored, and why not."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer import __version__, revision, store
from analyzer.errors import MCPTapError
from analyzer.session import SessionAnalysis

FLUSH_FRAMES = 20_000
"""Frames analysed between writes of their rows (bounds memory on long sessions)."""


@dataclass
class Report:
    sessions: list[dict] = field(default_factory=list)
    findings: list[tuple] = field(default_factory=list)
    methods: dict[str, dict] = field(default_factory=dict)  # per method: calls, errors, unanswered, latencies
    stored: bool = False
    not_stored_reason: str | None = None
    db_path: str = ""


def analyze(db_path: str, *, session: str | None = None, fallback_revision: str | None = None, policy=None,
            store_results: bool = True, progress: Callable[[int], None] | None = None) -> Report:
    reader = store.open_existing(db_path)
    report = Report(db_path=db_path)
    try:
        ids = [store.resolve_session(reader, session)] if session else [s["id"] for s in store.list_sessions(reader)]
        writer, report.not_stored_reason = _writer(db_path) if store_results else (None, "not asked to")
        try:
            for sid in ids:
                meta = store.get_session(reader, sid)
                rev = revision.detect(store.iter_raw_frames(reader, sid), fallback_revision)
                analysis = SessionAnalysis(
                    sid, revision=rev.revision, revision_source=rev.source, stdio=meta["transport"] == "stdio",
                    ended=meta["ended_at"] is not None and meta["transport"] != "import", policy=policy)
                if writer is not None:
                    writer = _write(writer, report, lambda c: store.clear_analysis(c, sid), begin=True)
                count = 0
                for seq, ts, direction, raw in store.iter_raw_frames(reader, sid):
                    analysis.frame(seq, ts, direction, raw)
                    count += 1
                    if count % FLUSH_FRAMES == 0:
                        writer = _flush(writer, report, analysis)
                        if progress is not None:
                            progress(FLUSH_FRAMES)
                analysis.end()
                writer = _flush(writer, report, analysis)
                summary = analysis.summary()
                if writer is not None:
                    writer = _write(writer, report, lambda c: store.insert_analysis_summary(
                        c, summary, time.time(), f"mcptap {__version__}"), commit=True)
                report.sessions.append(summary)
                _merge_methods(report.methods, analysis.method_stats)
                if progress is not None:
                    progress(count % FLUSH_FRAMES)
        finally:
            if writer is not None:
                writer.close()
        report.stored = store_results and report.not_stored_reason is None
    finally:
        reader.close()
    return report


def analyze_session(reader: sqlite3.Connection, session_id: str, *, fallback_revision: str | None = None,
                    policy=None) -> tuple[dict, list, list]:
    """One session analysed in memory, nothing stored: (summary, message rows, finding rows)."""
    meta = store.get_session(reader, session_id)
    rev = revision.detect(store.iter_raw_frames(reader, session_id), fallback_revision)
    analysis = SessionAnalysis(session_id, revision=rev.revision, revision_source=rev.source,
                               stdio=meta["transport"] == "stdio",
                               ended=meta["ended_at"] is not None and meta["transport"] != "import", policy=policy)
    for seq, ts, direction, raw in store.iter_raw_frames(reader, session_id):
        analysis.frame(seq, ts, direction, raw)
    analysis.end()
    return analysis.summary(), analysis.take_rows(), analysis.take_findings()


def _writer(db_path: str) -> tuple[sqlite3.Connection | None, str | None]:
    try:
        return store.connect(db_path), None
    except (sqlite3.Error, OSError) as exc:
        return None, _why(exc)


def _write(conn, report: Report, fn, *, begin: bool = False, commit: bool = False):
    """Run a write; on failure keep analysing without storing, and say why once."""
    try:
        if begin:
            conn.execute("BEGIN IMMEDIATE")
        fn(conn)
        if commit:
            conn.execute("COMMIT")
        return conn
    except (sqlite3.Error, OSError) as exc:
        report.not_stored_reason = _why(exc)
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
        except sqlite3.Error:
            pass
        return None


def _flush(writer, report: Report, analysis: SessionAnalysis):
    rows, found = analysis.take_rows(), analysis.take_findings()
    report.findings.extend(found)
    if writer is not None and (rows or found):
        writer = _write(writer, report, lambda c: store.insert_analysis_rows(c, rows, found))
    return writer


def _merge_methods(total: dict, stats: dict) -> None:
    for method, s in stats.items():
        t = total.setdefault(method, {"calls": 0, "errors": 0, "unanswered": 0, "latencies": []})
        t["calls"] += s["calls"]
        t["errors"] += s["errors"]
        t["unanswered"] += s["unanswered"]
        t["latencies"].extend(s["latencies"])


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class AnalyzeError(MCPTapError):
    pass
