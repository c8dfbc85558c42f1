"""The notebooks' data, made in the notebook's folder when missing: the demo's recording and its HTTP session.

    from mcptap.demo.notebooks import incident_log, recording

    DB = recording()        # $MCPTAP_NOTEBOOK_DB, or recording.db here (`mcptap demo` records it if missing)
    LOG = incident_log()    # $MCPTAP_NOTEBOOK_LOG, or incident.jsonl here (the demo's HTTP session)

Jupyter runs a notebook's kernel in the notebook's folder, so "here" is that folder. A file appears
whole or not at all (made aside, then renamed into place): a run cut short leaves no half recording
that a later run would take for the data."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mcptap import store

from mcptap.readers import exporter
from mcptap.errors import MCPTapError
from mcptap.outfile import WriteOptions

RECORDING = "recording.db"
INCIDENT_LOG = "incident.jsonl"
INCIDENT_SESSION = "demo-http"
DB_VARIABLE = "MCPTAP_NOTEBOOK_DB"
LOG_VARIABLE = "MCPTAP_NOTEBOOK_LOG"
DEMO_TIMEOUT_S = 300


def recording(folder: str | os.PathLike = ".") -> str:
    """The database the explore notebook reads: the one $MCPTAP_NOTEBOOK_DB names, else the demo's in `folder`."""
    return os.environ.get(DB_VARIABLE) or demo_recording(folder)


def incident_log(folder: str | os.PathLike = ".") -> str:
    """The frame-log the incident notebook audits: the one $MCPTAP_NOTEBOOK_LOG names, else incident.jsonl
    in `folder`, exported (if missing) from the demo's recording there, which is recorded first if missing."""
    named = os.environ.get(LOG_VARIABLE)
    if named:
        return named
    log = Path(folder) / INCIDENT_LOG
    if not log.exists():
        db = demo_recording(folder)
        print(f"No {log} here: the demo's HTTP session ({INCIDENT_SESSION}) exported from {db}", flush=True)
        conn = store.open_existing(db)
        try:
            session = store.resolve_session(conn, INCIDENT_SESSION)
            with _aside(log) as partial, open(partial, "w", encoding="utf-8") as out:
                exporter.export(conn, out, WriteOptions(sessions=[session]))
        finally:
            conn.close()
    return str(log)


def demo_recording(folder: str | os.PathLike = ".") -> str:
    """recording.db in `folder`, recorded by `mcptap demo` first if it is not there: the bundled stdio
    server through the tee and the bundled HTTP server through the proxy, each making one mistake."""
    db = Path(folder) / RECORDING
    if not db.exists():
        print(f"No {db} here: recording one with mcptap demo (the bundled servers through the tee and the proxy)",
              flush=True)
        with tempfile.TemporaryDirectory(prefix="mcptap-demo-") as scratch:
            made = Path(scratch) / RECORDING  # the demo also writes its HTML report beside it: left in scratch
            _run_demo(made)
            with contextlib.closing(sqlite3.connect(made)) as conn:
                store.checkpoint(conn)  # all of it in the one file that is copied
            with _aside(db) as partial:
                shutil.copy2(made, partial)
    return str(db)


def _run_demo(db: Path) -> None:
    argv = [sys.executable, "-m", "mcptap", "demo", "--db", str(db)]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=DEMO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise MCPTapError(f"mcptap demo did not finish within {DEMO_TIMEOUT_S}s") from None
    if done.returncode != 0 or not db.exists():
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise MCPTapError(f"mcptap demo failed (exit {done.returncode})" + (f": {said[-1]}" if said else ""))


@contextlib.contextmanager
def _aside(target: Path) -> Iterator[Path]:
    """A partial name beside `target` to write (.NAME.partial.EXT, which .gitignore ignores as it does NAME),
    renamed onto `target` when the block succeeds and removed when it fails."""
    partial = target.with_name(f".{target.stem}.partial{target.suffix}")
    try:
        yield partial
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
