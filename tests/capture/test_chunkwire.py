"""Chunk records between the tee and its recorder process (addons/shipping/chunkwire.py): whatever way
the pipe splits them, they come out whole and in order; a torn last record is dropped."""

import json
import os
import threading

import pytest

from mcptap.addons.shipping.chunkwire import END, SESSION, RecordReader, chunk_header, json_record


def records_through_a_pipe(data: bytes, piece: int) -> list:
    """Write `data` into a pipe `piece` bytes at a time from a thread; read records back."""
    r, w = os.pipe()

    def writer():
        with os.fdopen(w, "wb", buffering=0) as fh:
            for i in range(0, len(data), piece):
                fh.write(data[i:i + piece])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        return list(RecordReader(r))
    finally:
        thread.join()
        os.close(r)


STREAM = (json_record(SESSION, {"id": "s"}) + chunk_header("c2s", 1.5, 3) + b"abc"
          + chunk_header("stderr", 2.5, 0) + chunk_header("s2c", 3.5, 5) + b"de\nfg" + json_record(END, {"exit_status": 0}))


@pytest.mark.parametrize("piece", [1, 2, 7, 13, len(STREAM)])
def test_records_come_out_whole_however_the_pipe_splits_them(piece):
    got = records_through_a_pipe(STREAM, piece)
    assert [(kind, ts, payload) for kind, ts, payload in got[1:-1]] == [(0, 1.5, b"abc"), (2, 2.5, b""), (1, 3.5, b"de\nfg")]
    assert got[0][0] == SESSION and json.loads(got[0][2]) == {"id": "s"}
    assert got[-1][0] == END and json.loads(got[-1][2]) == {"exit_status": 0}


def test_a_torn_last_record_is_dropped_and_the_rest_kept():
    torn = chunk_header("s2c", 1.0, 10) + b"only5"
    got = records_through_a_pipe(chunk_header("c2s", 0.5, 2) + b"ok" + torn, 4)
    assert got == [(0, 0.5, b"ok")]


def test_the_pacing_hook_runs_before_every_read():
    calls = []
    r, w = os.pipe()
    os.write(w, chunk_header("c2s", 0.0, 1) + b"x")
    os.close(w)
    reader = RecordReader(r)
    reader.before_read = lambda: calls.append(1)
    try:
        assert list(reader) == [(0, 0.0, b"x")]
    finally:
        os.close(r)
    assert len(calls) == 2  # the read that got the record, and the one that got EOF
