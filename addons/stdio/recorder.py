"""The recorder process of `mcptap record`: everything the stdio tee records is stored from here,
in a process of its own, so that framing and SQLite never hold the tee's interpreter lock while a
chunk waits to be forwarded.

The tee (addons/stdio/tee.py) starts it as `python -P -m mcptap.addons.stdio.recorder DB` and writes
records (addons/shipping/chunkwire.py) to its stdin: first the session row, then every chunk in the order
the chunks passed, then the session's end. Here lines are cut out of the chunks (each line a
frame, stamped with the arrival time of the chunk holding its last byte) and handed, as final
store rows, to a SessionWriter (analyzer/store/writer.py), which commits in batches or spools. When the
writer falls behind, this process stops reading: the pipe fills and the tee's queue takes the
rest (in memory, then on disk), never the wire. If the tee dies, EOF comes early: what arrived is
still stored and the session is closed without an exit status.

Its stdout is not the host's (the tee gives it /dev/null); its warnings go to the shared stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from itertools import repeat

from mcptap.addons.shipping.background import recorder_main
from mcptap.addons.shipping.chunkwire import END, SESSION, STREAMS, RecordReader
from mcptap.redaction import FrameRedactor, Redaction
from mcptap.store import redact_row, stored_raw, stored_raws
from mcptap.store.writer import STALL_S, SessionWriter
from mcptap.wire.bounded import CUT, DEFAULT_MAX_FRAME, cut_row
from mcptap.wire.framing import LineFramer

C2S, S2C, STDERR = STREAMS


class Recorder:
    """Cuts frames out of chunks, in the order they passed, and hands them to the writer."""

    def __init__(self, writer: SessionWriter, redactor: FrameRedactor | None = None,
                 max_frame: int = DEFAULT_MAX_FRAME, on_frames: Callable[[list[tuple]], None] | None = None):
        """`on_frames(rows)`: also given each batch of frame rows as they are stored (redacted and
        cut), and must not wait (the live telemetry's queue, analyzer/report/otlp_live.py)."""
        self._on_frames = on_frames
        self._redactor = None if redactor is None or redactor.off else redactor
        self._sid = writer.session["id"]
        self._writer = writer
        # a line longer than max_frame is stored cut and marked (analyzer/wire/bounded.py); the wire is the tee's
        self._framers = {C2S: LineFramer(max_frame), S2C: LineFramer(max_frame), STDERR: LineFramer(max_frame)}
        self._last_ts = {C2S: 0.0, S2C: 0.0, STDERR: 0.0}
        self._seq = 0
        self._err_seq = 0

    def chunk(self, stream: str, ts: float, chunk: bytes) -> None:
        """Rows for every line the chunk completes, in their final form (store rows)."""
        self._last_ts[stream] = ts
        framer = self._framers[stream]
        lines = framer.feed(chunk)
        if not lines:
            return
        cut = framer.cut
        n, sid = len(lines), self._sid
        nbytes = sum(map(len, lines)) + n
        if stream == STDERR:
            seq = self._err_seq
            rows = list(zip(repeat(sid, n), range(seq + 1, seq + n + 1), repeat(ts, n), stored_raws(lines),
                            repeat(0, n)))
            if self._redactor is not None:
                for i in self._redactor.text_candidates(lines):
                    rows[i] = self._stderr_row(rows[i], lines[i])
            for i in cut or ():
                rows[i] = rows[i][:4] + (CUT,)
            self._err_seq = seq + n
            self._writer.add([], rows, nbytes)
        else:
            seq = self._seq
            rows = list(zip(repeat(sid, n), range(seq + 1, seq + n + 1), repeat(ts, n), repeat(stream, n),
                            stored_raws(lines), map(len, lines), repeat(0, n), repeat(None, n)))
            if self._redactor is not None:
                for i in self._redactor.candidates(lines):
                    rows[i] = redact_row(rows[i], self._redactor)
            for i, size in (cut or {}).items():
                rows[i] = cut_row(rows[i], size)
            self._seq = seq + n
            self._writer.add(rows, [], nbytes)
            if self._on_frames is not None:
                self._on_frames(rows)

    def _stderr_row(self, row: tuple, line: bytes) -> tuple:
        """A stderr row with the line's secrets replaced (analyzer/redaction/__init__.py FrameRedactor.text)."""
        new, found = self._redactor.text(line)
        return row if found is None else row[:3] + (stored_raw(new),) + row[4:]

    def finish(self) -> None:
        """Record what followed the last newline of each stream (an incomplete line)."""
        frames, errs, nbytes = [], [], 0
        for ts, stream in sorted((self._last_ts[s], s) for s in (C2S, S2C)):
            framer = self._framers[stream]
            size = framer.size
            tail = framer.finish()
            if tail is not None:
                self._seq += 1
                row = (self._sid, self._seq, ts, stream, stored_raw(tail), len(tail), 1, None)
                row = redact_row(row, self._redactor) if self._redactor is not None else row
                frames.append(row if size <= len(tail) else cut_row(row, size))
                nbytes += len(tail)
        size = self._framers[STDERR].size
        tail = self._framers[STDERR].finish()
        if tail is not None:
            self._err_seq += 1
            row = (self._sid, self._err_seq, self._last_ts[STDERR], stored_raw(tail), 1 if size <= len(tail) else CUT)
            errs.append(self._stderr_row(row, tail) if self._redactor is not None else row)
            nbytes += len(tail)
        if frames or errs:
            self._writer.add(frames, errs, nbytes)
        if frames and self._on_frames is not None:
            self._on_frames(frames)


def record_from(fd: int, db_path: str, redaction: Redaction | None = None, *,
                max_frame: int = DEFAULT_MAX_FRAME, on_frames: Callable[[list[tuple]], None] | None = None,
                on_session: Callable[[dict], None] | None = None) -> int:
    """Store the session the records on `fd` carry; 0, or 2 when no session record came.
    `on_session(row)`, `on_frames(rows)`: told the session's row and its frames as they are stored."""
    reader = RecordReader(fd)
    records = iter(reader)
    first = next(records, None)
    if first is None or first[0] != SESSION:
        sys.stderr.write("mcptap: error: the recorder got no session to record\n")
        return 2
    redactor = FrameRedactor(redaction)
    writer = SessionWriter(db_path, redactor.session_fields(json.loads(first[2])))  # its command line redacted
    if on_session is not None:
        on_session(writer.session)
    room = writer.backlog.wait_for_room

    def pace() -> None:  # read no further than the writer can take: the tee's queue holds the rest
        if not room(STALL_S):
            writer.stalled()

    reader.before_read = pace
    writer.start()
    recorder = Recorder(writer, redactor, max_frame, on_frames)
    end = {"ended_at": None, "exit_status": None}
    last_ts = None
    for kind, ts, payload in records:
        if kind == END:
            end = json.loads(payload)
            break
        recorder.chunk(STREAMS[kind], ts, payload)
        last_ts = ts
    else:  # EOF without an end: the tee died; close the session at the last thing seen
        end["ended_at"] = last_ts
    recorder.finish()
    writer.close(end["ended_at"], end["exit_status"])
    return 0


def main() -> None:
    recorder_main(record_from, "mcptap.addons.stdio.recorder", "the recorder")


if __name__ == "__main__":
    main()
