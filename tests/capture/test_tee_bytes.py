"""The tee is invisible on the wire: real child processes, real bytes, compared with and
without `mcptap record`, and the recorded frames compared with the lines that passed."""

import sqlite3

import pytest

from tests.conftest import frames, run, tee, tool

import sys

SAMPLES = {
    "json_lines": b'{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","method":"x"}\n',
    "non_json_and_blank": b"server starting...\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n",
    "invalid_utf8": b"\xff\xfe\xfd\n{\"a\":\"\xc3\xa9\"}\n\xed\xa0\x80\n",
    "crlf": b'{"a":1}\r\n{"b":2}\r\n',
    "no_final_newline": b'{"a":1}\n{"b":2',
    "nul_bytes": b"a\x00b\n\x00\n",
}


def expected_lines(data: bytes) -> tuple[list[bytes], bool]:
    lines = data.split(b"\n")
    tail = lines.pop()
    return lines + ([tail] if tail else []), bool(tail)


def emit(tmp_path, data: bytes, *extra: str) -> list[str]:
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    return [sys.executable, tool("emit.py"), str(src), *extra]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_server_output_passes_unchanged_and_every_line_is_a_frame(tmp_path, db, name):
    data = SAMPLES[name]
    child = emit(tmp_path, data)
    direct = run(child)
    through = run(tee(db, *child))
    assert through.returncode == direct.returncode == 0
    assert through.stdout == direct.stdout == data
    assert through.stderr == b""  # the tee says nothing when nothing is wrong
    lines, has_tail = expected_lines(data)
    assert frames(db, "s2c") == lines
    incomplete = sqlite3.connect(db).execute("SELECT incomplete FROM frames ORDER BY seq").fetchall()
    assert [i for (i,) in incomplete] == [0] * (len(lines) - has_tail) + [1] * has_tail


@pytest.mark.parametrize("chunks", ["1", "2,3", "7", "13,1,50", "4096"])
def test_chunks_split_anywhere_still_give_the_same_bytes_and_frames(tmp_path, db, chunks):
    data = b"".join(SAMPLES[k] for k in sorted(SAMPLES) if k != "no_final_newline") * 3
    through = run(tee(db, *emit(tmp_path, data, "--chunks", chunks)))
    assert through.stdout == data
    assert frames(db, "s2c") == expected_lines(data)[0]


def test_host_input_reaches_the_server_unchanged_and_is_recorded(db):
    data = b"".join(SAMPLES.values()) + b"last line without newline"
    through = run(tee(db, "cat"), input=data)
    assert through.stdout == data
    lines, _ = expected_lines(data)
    assert frames(db, "c2s") == lines
    assert frames(db, "s2c") == lines


def test_a_20_mib_line_passes_and_is_recorded_whole(tmp_path, db):
    line = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + b"x" * (20 << 20) + b'"}}'
    data = line + b"\nafter\n"
    through = run(tee(db, *emit(tmp_path, data)), timeout=120)
    assert through.returncode == 0
    assert through.stdout == data
    assert frames(db, "s2c") == [line, b"after"]


def test_stderr_passes_unchanged_and_is_recorded_apart_from_frames(tmp_path, db):
    data = b"log one\n\xff log two\nno newline"
    through = run(tee(db, *emit(tmp_path, data, "--stderr")))
    assert through.stderr == data
    assert through.stdout == b""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT CAST(raw AS BLOB), incomplete FROM stderr_lines ORDER BY seq").fetchall()
    assert rows == [(b"log one", 0), (b"\xff log two", 0), (b"no newline", 1)]
    assert frames(db) == []


def test_frames_are_numbered_in_observed_order_with_their_timestamps(db):
    through = run(tee(db, "cat"), input=b"a\nb\nc\n")
    assert through.returncode == 0
    rows = sqlite3.connect(db).execute("SELECT seq, direction, ts FROM frames ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == list(range(1, 7))
    # a request is queued before it is forwarded, so no echo can precede its line
    seen = {"c2s": 0, "s2c": 0}
    for _, direction, _ in rows:
        seen[direction] += 1
        assert seen["s2c"] <= seen["c2s"]
