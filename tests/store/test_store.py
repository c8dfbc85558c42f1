"""The store (analyzer/store/__init__.py, analyzer/store/migrations.py): migrations, exact bytes, session lookup."""

import os
import sqlite3
import stat

import pytest

from mcptap import store

from mcptap.store import derived, migrations
from mcptap.errors import NotADatabase, SessionNotFound
from mcptap.ids import new_session_id


def make_session(conn, sid, label=None, started_at=1.0):
    store.insert_session(conn, {"id": sid, "transport": "stdio", "label": label, "started_at": started_at})


def test_migrations_can_be_run_again_and_are_recorded_once(db):
    conn = store.connect(db)
    store.ensure_schema(conn)
    conn.close()
    conn = store.connect(db)
    names = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'mcptap'").fetchall()
    assert names == [(name,) for name, _ in migrations.MIGRATIONS]
    assert {"sessions", "frames", "stderr_lines", "messages", "findings", "analyses"} <= {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_new_database_is_in_wal_mode_and_readable_by_its_owner_only(db):
    conn = store.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","id":1}', b"\xff\xfe\x00 binary", b"caf\xc3\xa9", b"\xed\xa0\x80 lone surrogate",
    b"", b"nul \x00 inside", b"crlf\r",
])
def test_frames_come_back_byte_for_byte(db, raw):
    conn = store.connect(db)
    make_session(conn, "s")
    store.append_rows(conn, [store.frame_row("s", 1, 2.5, "c2s", raw, 0)], [store.stderr_row("s", 1, 2.6, raw, 1)])
    (frame,) = store.iter_frames(conn, "s")
    (line,) = store.iter_stderr(conn, "s")
    assert (frame.raw, frame.ts, frame.direction, frame.incomplete) == (raw, 2.5, "c2s", False)
    assert (line.raw, line.incomplete) == (raw, True)
    assert conn.execute("SELECT size FROM frames").fetchone()[0] == len(raw)


def test_utf8_frames_are_stored_as_text_so_datasette_shows_them(db):
    conn = store.connect(db)
    make_session(conn, "s")
    rows = [store.frame_row("s", 1, 1.0, "c2s", b'{"a":"\xc3\xa9"}', 0), store.frame_row("s", 2, 1.0, "s2c", b"\xff", 0)]
    store.append_rows(conn, rows, [])
    assert conn.execute("SELECT typeof(raw) FROM frames ORDER BY seq").fetchall() == [("text",), ("blob",)]


def test_session_ids_are_unique_and_sort_by_time():
    ids = [new_session_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert ids[0][:8] <= ids[-1][:8]
    assert all(len(i) == 36 and i[14] == "7" for i in ids)


def test_a_session_is_found_by_id_prefix_or_newest_label(db):
    conn = store.connect(db)
    make_session(conn, "aaaa-1", label="x", started_at=1)
    make_session(conn, "aaab-2", label="x", started_at=2)
    assert store.resolve_session(conn, "aaaa-1") == "aaaa-1"
    assert store.resolve_session(conn, "aaab") == "aaab-2"
    assert store.resolve_session(conn, "x") == "aaab-2"
    with pytest.raises(SessionNotFound):
        store.resolve_session(conn, "aaa")  # ambiguous
    with pytest.raises(SessionNotFound):
        store.resolve_session(conn, "nope")


def test_a_session_is_found_by_its_handle_or_by_its_place_among_the_newest(db):
    conn = store.connect(db)
    ids = [new_session_id() for _ in range(50)]  # one millisecond or so apart: they share their first characters
    for n, sid in enumerate(ids):
        make_session(conn, sid, label="same", started_at=float(n))
    named = store.handles(ids)
    assert len(set(named.values())) == 50 and all(len(h) < 13 for h in named.values())
    assert all(store.resolve_session(conn, h) == sid for sid, h in named.items())
    assert [store.resolve_session(conn, f"@{n}") for n in (1, 2, 50)] == [ids[-1], ids[-2], ids[0]]
    for bad in ("@51", "@0"):
        with pytest.raises(SessionNotFound):
            store.resolve_session(conn, bad)
    with pytest.raises(SessionNotFound, match="matches 50 sessions"):
        store.resolve_session(conn, ids[0][:6])  # every id starts so: ambiguous, as before


def test_a_handle_is_never_an_other_ids_start_nor_shorter_than_four():
    ids = ["abcd-0000-1111", "1111-9999-abcd", "ffff-2222-3333"]
    named = store.handles(ids)
    assert named["1111-9999-abcd"] != "abcd" and "1111-9999-abcd".endswith(named["1111-9999-abcd"])
    assert min(map(len, named.values())) >= 4 and not any(h.startswith("-") for h in named.values())
    assert store.handles(["one-id"]) == {"one-id": "e-id"} and store.handles(["abc"]) == {"abc": "abc"}


def test_opening_something_that_is_not_an_mcptap_database_is_a_named_error(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    for path in (tmp_path / "missing.db", text, other, tmp_path):
        with pytest.raises(NotADatabase):
            store.open_existing(path)


def test_opening_a_database_keeps_the_locks_this_process_holds_on_it(db, tmp_path):
    """fcntl locks belong to the process and any close() of the file drops them all: if opening
    read the file itself, another process closing its connection would take itself for the last
    user and delete the WAL under connections still open here."""
    import subprocess
    import sys

    path = str(db)
    conn = store.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
    conn.execute("INSERT INTO t VALUES (1)")  # the WAL has frames
    store.open_existing(path).close()
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('INSERT INTO t VALUES (2)'); c.close()")
    subprocess.run([sys.executable, "-c", code, path], check=True, timeout=30)
    assert os.path.exists(path + "-wal"), "another process deleted the WAL of a database still open here"
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
    conn.close()


@pytest.mark.parametrize("n", [0, 1, derived.ROWS_PER_INSERT - 1, derived.ROWS_PER_INSERT, 2 * derived.ROWS_PER_INSERT + 7,
                               5 * derived.ROWS_PER_INSERT])
def test_analysis_rows_are_stored_each_as_given_however_many_and_whatever_their_cells(db, n):
    conn = store.connect(db)
    rows = [["b" if seq > n * 2 // 3 or seq == 50 else "a", seq, None if seq % 3 else 0, "c2s" if seq % 2 else "s2c",
             "request", str(seq) if seq % 5 else None, "tools/call" if seq % 7 else None, seq + 1,
             seq / 7 if seq % 4 else None] for seq in range(1, n + 1)]
    findings = [("a", 1, None, "parse-error", "error", "not JSON", None)]
    with store.write_transaction(conn):
        store.insert_analysis_rows(conn, rows, findings)
    assert [list(r) for r in conn.execute("SELECT session_id, frame_seq, idx, direction, kind, id, method, paired_frame, "
                                          "latency_s FROM messages ORDER BY frame_seq")] == rows
    assert conn.execute("SELECT session_id, frame_seq, idx, code, severity, message, related_frame FROM findings"
                        ).fetchall() == findings
    conn.close()


def test_a_database_and_its_parquet_dataset_resolve_every_session_reference_alike(db, tmp_path):
    from mcptap.store import dataset

    conn = store.connect(db)
    make_session(conn, "aaaa-1", label="x", started_at=1)
    make_session(conn, "aaab-2", label="x", started_at=2)
    make_session(conn, "bbbb-3", label="aaa", started_at=3)  # a label that is also an ambiguous id prefix
    make_session(conn, "cccc-4", label="bbbb", started_at=4)  # a label that is also another's id prefix
    conn.commit()
    folder = tmp_path / "ds"
    dataset.export_database(str(db), folder)
    for source in (conn, folder, str(folder)):
        assert store.resolve_sessions(source, None) is None
        assert store.resolve_sessions(source, "aaab") == ["aaab-2"]
        assert store.resolve_sessions(source, ["x", "aaaa-1", "aaab-2", "bbbb"]) == ["aaab-2", "aaaa-1", "bbbb-3"]
        assert store.resolve_sessions(source, ["cccc-4", "cccc"]) == ["cccc-4"]
        with pytest.raises(SessionNotFound, match=r"'aaa' matches 2 sessions \(aaaa-1, aaab-2\)"):
            store.resolve_sessions(source, ["x", "aaa"])
        with pytest.raises(SessionNotFound, match="no session 'nope'"):
            store.resolve_sessions(source, "nope")
    conn.close()
