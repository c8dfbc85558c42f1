"""The library's calls that judge: analyse a database, imported files or a Parquet dataset (the
rules, a policy, a baseline, a display filter), write the findings in a format of the registry,
and the HTML report."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import IO, Any

from mcptap.errors import AnalysisError
from mcptap.api.databases import import_files
from mcptap.api.servers import read_baseline
from mcptap.api.meters import Meter, _quiet


ENGINES = ("local", "spark")
"""Where a Parquet dataset is analysed: worker processes here, or a Spark cluster."""


class Analysis:
    """What `analyze` gives: the engine's Report (`report`: sessions, findings, whether it was
    stored), the database it read (`db`: a temporary one while the Analysis is open), the
    imported files' sources by session id (`sources`, FILE arguments: the SARIF locations), the
    session ids analysed (`ids`, None: every one), and whether `db` is a Parquet dataset. Close it
    (or use it in a `with`) to remove what was temporary."""

    def __init__(self, report: Any, db: str, sources: dict | None = None, ids: list[str] | None = None,
                 dataset: bool = False):
        self.report, self.db, self.sources, self.ids, self.dataset = report, db, sources, ids, dataset
        self._cleanup = contextlib.ExitStack()

    def close(self) -> None:
        self._cleanup.close()

    def __enter__(self) -> Analysis:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_revision(revision: str | None) -> None:
    """AnalysisError unless `revision` is None or an MCP revision mcptap knows."""
    from mcptap.analysis import mcp

    if revision is not None and revision not in mcp.KNOWN_REVISIONS:
        raise AnalysisError(f"unknown revision {revision!r}; known: {', '.join(mcp.KNOWN_REVISIONS)}")


def analyze(db: str | os.PathLike | None = None, *, files: Sequence[str] = (), sessions: Sequence[str] | None = None,
            revision: str | None = None, ignore: Sequence[str] = (), severity: Sequence[str] = (),
            config: str | None = None, groups: frozenset[str] | None = None, baseline: str | None = None,
            where: str | None = None,
            jobs: int | None = None, engine: str | None = None, master: str | None = None, cost: bool = False,
            warn: Callable[[str], None] | None = None, meter: Meter | None = None) -> Analysis:
    """Run every rule over the database's sessions (`sessions`: ids, prefixes or labels; default
    all) and store the `messages`, `findings` and `analyses` tables, as `mcptap analyze` does.
    `files`: frame logs imported first (into `db`, or into a temporary database when `db` is None),
    and only their sessions analysed. `engine` (local, spark; `master` Spark's URL): `files` is one
    Parquet dataset's folder (a folder given alone is one too). `revision`: the one to judge a
    session by when it does not say; `ignore` codes, `severity` CODE=LEVEL overrides, `config` a
    policy file (default ./mcptap.toml), `groups` only the rules of these groups (`security`), `baseline` a file of `mcptap baseline`; `where`: only the
    findings on the frames this display filter selects; `cost`: the report's `cost` figures (the
    JSON report's). `warn`: what is said of results that could not be stored."""
    from mcptap.analysis import policy

    meter = meter or _quiet
    check_revision(revision)
    rules = policy.build(ignore, severity, config, groups=groups)
    if where is not None:
        from mcptap.store import filterlang

        filterlang.parse(where)  # a bad filter fails before the analysis
    if baseline is not None:
        rules.baseline = read_baseline(baseline)
    files, named = list(files), list(sessions) if sessions else []
    done = Analysis(report=None, db=os.fspath(db) if db is not None else "")
    try:
        dataset = _dataset_of(files, named, engine, master)
        if dataset is not None:
            done.report, done.db, done.dataset = _analyze_dataset(dataset, engine, master, revision, rules, jobs,
                                                                  meter), dataset, True
        else:
            _analyze_database(done, files, named, revision, rules, jobs, cost, warn, meter)
        if where is not None:
            _keep_selected(done, where)
        if not done.report.stored and warn is not None:
            warn(f"results not stored in {done.db}: {done.report.not_stored_reason}")
    except BaseException:
        done.close()
        raise
    return done


def analyze_missing(db: str | os.PathLike, *, warn: Callable[[str], None] | None = None,
                    meter: Meter | None = None) -> list[str]:
    """Analyse the sessions of `db` not analysed yet, as the live faces (`mcptap view`, `mcptap
    tui`) do before they read a database as it is: only what `analyze` writes is written. When the
    file cannot be written, `warn` says what is missing and nothing is analysed. The sessions
    analysed."""
    from mcptap import store

    db = os.fspath(db)
    conn = store.open_existing(db)
    try:
        ids = store.session_ids(conn)
        done = set(store.analysis_summaries(conn)) if store.has_table(conn, "analyses") else set()
    finally:
        conn.close()
    missing = [sid for sid in ids if sid not in done]
    if missing and not os.access(db, os.W_OK):
        if warn is not None:
            warn(f"{len(missing)} sessions are not analysed and {db} cannot be written: their frames show the kind, "
                 "method and id of their own bytes, without pairs, latency or findings")
        return []
    if missing:
        from mcptap import engine

        with (meter or _quiet)() as shown:
            shown.stage("analyzing", None)
            engine.analyze(db, sessions=missing, progress=shown.advance)
    return missing


def _dataset_of(files: list[str], named: list[str], engine: str | None, master: str | None) -> str | None:
    """The Parquet dataset the files name (a folder, or any file under an engine), else None."""
    if engine is not None and engine not in ENGINES:
        raise AnalysisError(f"no engine {engine!r}; known: {', '.join(ENGINES)}")
    if engine is None and not (len(files) == 1 and os.path.isdir(files[0])):
        if master is not None:
            raise AnalysisError("--master goes with --engine spark")
        return None
    if len(files) != 1 or named:
        raise AnalysisError("--engine analyses one Parquet dataset: give its folder, and nothing else, as FILE")
    if master is not None and engine != "spark":
        raise AnalysisError("--master goes with --engine spark")
    return files[0]


def _analyze_dataset(path: str, engine: str | None, master, revision, rules, jobs, meter):
    from mcptap import extras
    from mcptap.engine import fleet

    extras.need("parquet", "a Parquet dataset")
    if engine == "spark":
        extras.need("spark", "--engine spark")
    with meter("analyzing") as shown:
        return fleet.analyze_dataset(path, engine=engine or "local", master=master, workers=jobs,
                                     fallback_revision=revision, policy=rules, progress=shown.advance)


def _analyze_database(done: Analysis, files, named, revision, rules, jobs, cost: bool, warn, meter) -> None:
    from mcptap import engine, store

    if files:
        if named:
            raise AnalysisError(f"{named[0]!r} is no file: a SESSION of a database cannot be combined with FILE "
                                "arguments")
        if not done.db:
            import tempfile

            done.db = os.path.join(done._cleanup.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-")),
                                   "analyze.db")
        from mcptap.report import sarif

        done.sources = {}
        for path, imported, how in import_files(done.db, files, locate=True, warn=warn, meter=meter):
            for s in imported:
                done.sources[s.id] = sarif.Source(path, s.lines if how.located else None)
    elif not done.db:
        raise AnalysisError("a database or files to analyse")
    conn = store.open_existing(done.db)
    try:
        done.ids = list(done.sources) if done.sources is not None else \
            store.resolve_sessions(conn, named) if named else None
        total = store.count_frames(conn, done.ids)
    finally:
        conn.close()
    with meter("analyzing", total) as shown:
        done.report = engine.analyze(done.db, fallback_revision=revision, policy=rules, progress=shown.advance,
                                     workers=jobs, sessions=done.ids, cost=cost)


def _keep_selected(done: Analysis, where: str) -> None:
    """Only the findings on the frames the display filter selects."""
    from mcptap.engine import selection

    if done.dataset:
        raise AnalysisError("--filter selects frames of a database: a Parquet dataset takes none")
    report = done.report
    if not report.stored:
        raise AnalysisError(f"--filter reads the stored analysis, which could not be stored: {report.not_stored_reason}")
    keep = selection.select(done.db, where, done.ids)
    report.findings = [f for f in report.findings
                       if f.frame_seq is not None and f.frame_seq in keep.get(f.session_id, ())]


def reaches(done: Analysis, fail_on: str) -> bool:
    """Whether a finding of the analysis is at or above `fail_on` (error, warning; never: no)."""
    from mcptap import report

    return report.reaches(done.report, fail_on)


def write_analysis(done: Analysis, out: IO[str], fmt: str = "text", *, color: bool = False, per_code: int = 5,
                   root: str | None = None, fail_on: str = "error") -> None:
    """The analysis in a format of the registry (text, json, jsonl, sarif, junit) to `out`; text
    lists `per_code` findings of a code per session (0: all); SARIF's locations are relative to
    `root` (default: the current folder)."""
    from mcptap.outfile import WriteOptions
    from mcptap.report import formats

    formats.get("table" if fmt == "text" else fmt, formats.ANALYSIS).write(done.report, out, WriteOptions(
        color=color, per_code=per_code, root=root, sources=done.sources, fail_on=fail_on))


def write_rules(out: IO[str], fmt: str = "text") -> None:
    """Every finding code (code, group, severity, summary, spec reference): text, json or jsonl."""
    from mcptap import report

    report.write_rules(out, "table" if fmt == "text" else fmt)
