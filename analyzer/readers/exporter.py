"""`mcptap export`: sessions as frame-log JSONL (framelog.py, exchangelog.py): every recorded table
a session has (its row, its HTTP exchanges, its frames with their exchange and SSE event id, its
stderr lines); `mcptap import` of the output gives them back identical, and an export of that
import is the same file."""

from __future__ import annotations

import sqlite3
from typing import TextIO

from mcptap import store
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.wire import exchangelog, framelog

PROGRESS_EVERY = 10_000  # frames between two calls of `progress`


def export(conn: sqlite3.Connection, out: TextIO, options: WriteOptions = NO_OPTIONS) -> int:
    """Write each of `options.sessions` (its row, its exchanges in the order they started, its
    frames in seq order, its stderr lines); the frame count.
    `options.progress(n)`: n more frames written (every PROGRESS_EVERY and at each session's end).
    `options.keep`: only these frames of each session (a display filter's; a session it lacks is left out)."""
    progress, keep = options.progress, options.keep
    written = 0
    for sid in options.sessions:
        wanted = None if keep is None else keep.get(sid)
        if keep is not None and not wanted:
            continue
        out.write(framelog.dumps(framelog.session_record(store.get_session(conn, sid), whole=True)) + "\n")
        for row in store.session_exchanges(conn, sid):
            out.write(framelog.dumps(exchangelog.exchange_record(sid, row)) + "\n")
        told = written
        cut = store.cut_frames(conn, sid)  # seq -> full size of the frames stored cut at --max-frame
        refs = store.frame_refs(conn, sid)  # seq -> (exchange, SSE event id) of the frames that crossed HTTP
        for f in store.iter_frames(conn, sid):
            if wanted is not None and f.seq not in wanted:
                continue
            record = framelog.frame_record(sid, f.seq, f.ts, f.direction, f.raw, f.incomplete, f.redacted,
                                           cut.get(f.seq), *refs.get(f.seq, (None, None)))
            out.write(framelog.dumps(record) + "\n")
            written += 1
            if progress is not None and written - told == PROGRESS_EVERY:
                progress(PROGRESS_EVERY)
                told = written
        if progress is not None and written > told:
            progress(written - told)
        for e in store.iter_stderr(conn, sid):
            out.write(framelog.dumps(framelog.stderr_record(sid, e.seq, e.ts, e.raw, e.incomplete)) + "\n")
    return written
