"""When the database cannot take frames, the session still works, a spool file holds every
frame, a one-line warning says where, and `mcptap import` brings the spool in."""

import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

from mcptap.store import BUSY_TIMEOUT_S
from tests.conftest import frames, mcptap, run, tee, tool
from tests.support.inprocess import cli

INPUT = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(50)) + b"\xff no newline"


def spool_files(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(folder, "*.spool.jsonl")))


def test_an_unwritable_database_path_spools_every_frame_to_a_temp_folder(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    bad_db = blocker / "rec.db"  # its parent is a file: nothing can be created there
    before = set(spool_files(tempfile.gettempdir()))
    result = run(tee(bad_db, "cat"), input=INPUT)
    assert result.returncode == 0
    assert result.stdout == INPUT  # the session still works
    assert result.stderr.count(b"\n") == 1 and b"warning" in result.stderr and b"Traceback" not in result.stderr
    (spool,) = set(spool_files(tempfile.gettempdir())) - before
    assert spool.encode() in result.stderr
    try:
        good_db = tmp_path / "good.db"
        imported = cli("import", "--db", str(good_db), spool)
        assert imported.returncode == 0, imported.stderr
        expected = INPUT.split(b"\n")
        assert frames(good_db, "c2s") == expected
        assert frames(good_db, "s2c") == expected
        row = sqlite3.connect(good_db).execute("SELECT transport, exit_status, ended_at IS NOT NULL FROM sessions")
        assert row.fetchone() == ("stdio", 0, 1)
    finally:
        os.unlink(spool)


def test_a_database_locked_past_the_busy_timeout_spools_and_the_spool_merges_back(tmp_path, db):
    locker = subprocess.Popen([sys.executable, tool("locker.py"), str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with locker:
        assert locker.stdout.readline() == "locked\n"
        result = run(tee(db, "cat"), input=INPUT, timeout=BUSY_TIMEOUT_S + 30)
        assert result.returncode == 0
        assert result.stdout == INPUT
        assert result.stderr.count(b"\n") == 1 and b"locked" in result.stderr
        locker.stdin.close()
        assert locker.wait(timeout=30) == 0
    (spool,) = spool_files(tmp_path)
    assert oct(os.stat(spool).st_mode & 0o777) == "0o600"
    assert frames(db) == []
    imported = cli("import", "--db", str(db), spool)
    assert imported.returncode == 0, imported.stderr
    expected = INPUT.split(b"\n")
    assert frames(db, "c2s") == expected and frames(db, "s2c") == expected
    # importing the spool again adds nothing and loses nothing
    again = cli("import", "--db", str(db), spool)
    assert again.returncode == 0
    assert frames(db, "c2s") == expected


def test_a_database_locked_for_less_than_the_busy_timeout_just_waits(tmp_path, db):
    locker = subprocess.Popen([sys.executable, tool("locker.py"), str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with locker:
        assert locker.stdout.readline() == "locked\n"
        proc = subprocess.Popen(tee(db, "cat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with proc:
            proc.stdin.write(INPUT)
            proc.stdin.flush()
            assert proc.stdout.read(len(INPUT)) == INPUT  # forwarding does not wait for the database
            locker.stdin.close()
            proc.stdin.close()
            assert proc.wait(timeout=BUSY_TIMEOUT_S + 30) == 0
            assert proc.stderr.read() == b""
    assert spool_files(tmp_path) == []
    assert frames(db, "c2s") == INPUT.split(b"\n")


def test_a_store_that_cannot_even_be_imported_sends_the_session_to_the_spool(tmp_path, db):
    """A broken environment (here: sqlite3's connect, which the store calls when it opens a
    database, fails as a module that cannot be imported does) loses nothing: every frame goes to
    the spool, with one warning."""
    broken = tmp_path / "broken-site" / "sitecustomize.py"
    broken.parent.mkdir()
    broken.write_text('import sqlite3\n\n\ndef _broken(*args, **kwargs):\n    raise ImportError("sqlite3 is broken here")'
                      '\n\n\nsqlite3.connect = _broken\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    result = run(tee(db, "cat"), input=INPUT, env=env)
    assert result.returncode == 0 and result.stdout == INPUT
    assert result.stderr.count(b"\n") == 1 and b"warning" in result.stderr and b"Traceback" not in result.stderr
    (spool,) = spool_files(tmp_path)
    assert b"ImportError" in result.stderr and spool.encode() in result.stderr
    imported = cli("import", "--db", str(tmp_path / "good.db"), spool)
    assert imported.returncode == 0, imported.stderr
    assert frames(tmp_path / "good.db", "s2c") == INPUT.split(b"\n")


def test_a_spooled_http_session_keeps_its_exchanges_and_each_frame_names_its_exchange(tmp_path, db):
    """The HTTP recorder's sink on a locked database: the frames go to the spool with the exchange
    and SSE event id they crossed in, and each exchange once, whole (begun, then ended), so the
    spool's import gives the exchanges and the frames' links back."""
    from mcptap import store
    from mcptap.store.journal import Sink
    from mcptap.store.ops import EndOp, ExchangeOp, FrameOp, SessionOp

    request = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    said: list[str] = []
    locker = subprocess.Popen([sys.executable, tool("locker.py"), str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    with locker:
        assert locker.stdout.readline() == "locked\n"
        sink = Sink(str(db), warn=said.append)
        sink.write([SessionOp({"id": "h1", "transport": "http", "started_at": 1.0}),
                    FrameOp(store.http_frame_row("h1", 0, 1.0, "c2s", request, "x1", None)),
                    ExchangeOp({"id": "x1", "session_id": "h1", "method": "POST", "url": "http://127.0.0.1/mcp",
                                "started_at": 1.0})])
        sink.write([FrameOp(store.http_frame_row("h1", 0, 1.5, "s2c", answer, "x1", "ev-7")),
                    ExchangeOp({"id": "x1", "session_id": "h1", "status": 200, "response_type": "text/event-stream",
                                "ended_at": 1.6}),
                    EndOp("h1", 2.0)])
        sink.close()
        locker.stdin.close()
        assert locker.wait(timeout=30) == 0
    assert said and all("\n" not in line for line in said)
    (spool,) = spool_files(tmp_path)
    imported = cli("import", "--db", str(db), spool)
    assert imported.returncode == 0, imported.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT method, url, status, response_type, started_at, ended_at FROM exchanges").fetchall() \
        == [("POST", "http://127.0.0.1/mcp", 200, "text/event-stream", 1.0, 1.6)]
    (xid,) = conn.execute("SELECT id FROM exchanges").fetchone()
    assert conn.execute("SELECT CAST(raw AS BLOB), exchange_id, event_id FROM frames ORDER BY seq").fetchall() \
        == [(request, xid, None), (answer, xid, "ev-7")]
