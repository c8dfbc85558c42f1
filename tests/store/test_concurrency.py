"""Several recorders writing one database file at once: no "database is locked", no frame lost."""

import sqlite3
import subprocess
import sys

import pytest

from tests.conftest import tee, tool

TEES = 20
LINES = 300


@pytest.mark.serial
def test_twenty_tees_recording_into_one_file_at_once_keep_every_frame(tmp_path, db):
    data = tmp_path / "lines.bin"
    data.write_bytes(b"".join(b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}\n' % i for i in range(LINES)))
    procs = [subprocess.Popen(tee(db, sys.executable, tool("emit.py"), str(data), "--chunks", "977"),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(TEES)]
    errors = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0
        errors.append(err)
    assert errors == [b""] * TEES  # no warnings: nothing had to be spooled
    conn = sqlite3.connect(db)
    per_session = conn.execute("SELECT session_id, count(*), max(seq) FROM frames GROUP BY session_id").fetchall()
    assert len(per_session) == TEES
    assert all(count == LINES and top == LINES for _, count, top in per_session)
    assert conn.execute("SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL").fetchone() == (TEES,)
