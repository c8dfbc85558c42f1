"""One live recording of `mcptap demo` (its bundled servers through the tee and the proxy, a
stdio and an HTTP session, analysed, its HTML report beside it) made once per test process, and a
copy of it for each module that reads or changes it: the faces' tests need a live recording,
not a fresh one each. The demo itself is tested in tests/faces/test_cli.py."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import mcptap, run

DEMO_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def demo_recording(tmp_path_factory) -> Path:
    """The folder of the recording: demo.db and demo-report.html. Read-only: take a `demo_copy`."""
    folder = tmp_path_factory.mktemp("demo-recording")
    result = run(mcptap("demo", "--db", str(folder / "demo.db")), cwd=folder, timeout=DEMO_TIMEOUT_S)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert (folder / "demo-report.html").is_file()
    return folder


def demo_copy(recording: Path, folder: Path) -> dict:
    """The recording copied into `folder`: {"db", "page" (its report), "stdio", "http" (the two
    sessions' ids)}."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("demo.db", "demo.db-wal", "demo-report.html"):
        if (recording / name).exists():
            shutil.copyfile(recording / name, folder / name)
    db = folder / "demo.db"
    conn = sqlite3.connect(db)
    try:
        stdio = conn.execute("SELECT id FROM sessions WHERE transport = 'stdio'").fetchone()[0]
        http = conn.execute("SELECT id FROM sessions WHERE transport = 'http'").fetchone()[0]
    finally:
        conn.close()
    return {"db": db, "page": folder / "demo-report.html", "stdio": stdio, "http": http}
