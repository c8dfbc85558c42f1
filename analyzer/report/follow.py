"""`mcptap show --follow` and `mcptap sessions --follow`: what a tee or the proxy records, as it
is stored, read from the database alone (many followers beside one writer: WAL readers never
block it, nor it them).

Every POLL_S the session is analysed again in memory as `mcptap show` analyses it
(analyzer/report/transcript.py), without what only its end can tell, and the frames and stderr
lines stored since are printed, each with its kind, method, id, the frame it pairs with and its
findings, and among them, in time order, the exchanges that are no frames as `show` prints them
(the OAuth flow's, an error's own body); a request still waiting for its answer shows its kind,
method and id (its pair shows on its answer). A finding the analysis makes later about a frame already printed (a duplicate id
seen at the second request is printed with it; a finding about an earlier frame) gets a line
naming that frame. Once the session has ended, its end is judged (a request never answered),
those findings are printed (and those of the whole session, such as an unknown revision) and the
follow ends. Of each code only the first `per_code` findings are printed; the rest are counted at
the end. A follow that starts before the session's initialize exchange is complete judges its
first frames before the revision is known: what it printed stays printed.

A poll costs an analysis of the session so far: about a second for every 60,000 frames here, so a
very long session is shown with a delay that grows with it (POLL_S between the end of one poll and
the next)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable

from mcptap import store
from mcptap.errors import NotADatabase, warn_stderr
from mcptap.analysis.classify import classify
from mcptap.analysis.messages import Message
from mcptap.report import httplines, transcript
from mcptap.report.transcript import TimelineEntry
from mcptap.wire import jsonwire
from mcptap.wire.textsafe import printable, printing

POLL_S = 0.2


def follow_session(db_path: str, ref: str | None, write: Callable[[str], None], *, width: int = 160,
                   full: bool = False, stderr: bool = True, policy=None, per_code: int = 5,
                   stop: threading.Event | None = None) -> None:
    """Print session `ref` (id, id prefix or label) as it is recorded, until it ends; `ref` None:
    the newest session, then, once it has ended, the next one to start, until `stop` is set (the
    CLI stops on Ctrl-C). Every line `write` is given is printable (textsafe.printing)."""
    stop = stop or threading.Event()
    write = printing(write)
    conn = _opened(db_path, stop)
    if conn is None:
        return
    try:
        if ref is not None:
            _follow(conn, store.resolve_session(conn, ref), write, width, full, stderr, policy, per_code, stop)
            return
        followed: set[str] = set()
        while not stop.is_set():
            ids = [sid for sid in store.session_ids(conn) if sid not in followed]
            if not ids:
                stop.wait(POLL_S)
                continue
            newest = ids[-1]
            followed.update(ids)  # older ones that had not been followed are over or left to `show`
            _follow(conn, newest, write, width, full, stderr, policy, per_code, stop)
            if not stop.is_set():
                write("")
    finally:
        conn.close()


def _follow(conn, sid: str, write, width: int, full: bool, stderr: bool, policy, per_code: int,
            stop: threading.Event) -> None:
    after = (0, 0)  # the last frame and stderr line printed
    printed: set[tuple] = set()  # findings printed (or counted), as the analysis gives them
    told: set[str] = set()  # exchanges with a role printed (they have no seq: one that is stored late shows then)
    shown: dict[str, int] = {}  # per code: findings printed
    more: dict[tuple, int] = {}  # per (code, severity): findings not printed
    started = False
    while True:
        ended = store.get_session(conn, sid)["ended_at"] is not None  # read first: no frame comes after the end
        a = transcript.analyse(conn, sid, policy, finish=ended)
        if not started:
            for line in transcript.head_lines(a):
                write(line)
            write(transcript.COLUMNS_LINE)
            started = True
        entries = list(transcript.timeline(conn, sid, stderr, after))
        exchanges = [row for row in httplines.role_exchanges(conn, sid) if row["id"] not in told]
        told.update(row["id"] for row in exchanges)
        new_frames = {e.seq for e in entries if not e.source}
        fresh: dict[int | None, list] = {}
        for f in a.findings:
            if f in printed or (f.frame_seq is None and not ended):  # of the whole session: once it is over
                continue
            printed.add(f)
            if per_code and shown.get(f.code, 0) >= per_code:
                more[(f.code, f.severity)] = more.get((f.code, f.severity), 0) + 1
                continue
            shown[f.code] = shown.get(f.code, 0) + 1
            fresh.setdefault(f.frame_seq if f.frame_seq in new_frames else ("earlier", f.frame_seq), []).append(f)
        for entry in httplines.merged(entries, exchanges):
            if httplines.is_exchange(entry):  # the OAuth flow's, an error's own body: no frame
                write(httplines.line(entry, a.session["started_at"]))
                continue
            findings = fresh.pop(entry.seq, ()) if not entry.source else ()
            waiting = None if entry.source or entry.seq in a.rows else _waiting(entry)
            for line in transcript.entry_lines(a, entry, width, full, findings, waiting):
                write(line)
            after = (entry.seq, after[1]) if not entry.source else (after[0], entry.seq)
        for (_, seq), findings in fresh.items():
            for f in findings:
                where = f"on #{seq}: " if seq is not None else "on the session: "
                write(transcript.FINDING_INDENT + where + transcript.finding_line(f))
        if ended:
            for (code, severity), n in sorted(more.items()):
                write(f"{transcript.FINDING_INDENT}{severity}: {printable(code)}: {n} more in this session, not shown "
                      "(--max-per-code 0 shows every one)")
            s = a.session
            exit_status = "-" if s.get("exit_status") is None else s["exit_status"]
            write(f"session ended {transcript.clock(s.get('ended_at'))}  exit {exit_status}  "
                  f"{transcript.revision_text(a.summary)}")
            return
        if stop.wait(POLL_S):
            return


def _waiting(entry: TimelineEntry) -> Message | None:
    """A frame's message row as far as the frame alone tells (kind, id, method): shown for a
    request the analysis holds until its answer comes."""
    parsed = jsonwire.parse(entry.raw)
    if parsed.error is not None or type(parsed.value) is not dict:
        return None
    value = parsed.value
    method = value.get("method") if type(value.get("method")) is str else None
    ident = jsonwire.to_json(value["id"]) if "id" in value else None
    return Message(None, entry.seq, None, entry.direction, classify(value)[1], ident, method, None, None)


def follow_sessions(db_path: str, write: Callable[[str], None], *, stop: threading.Event | None = None) -> None:
    """`mcptap sessions --follow`: a line as each session starts and as it ends, until `stop`
    (the sessions there already are listed first)."""
    stop = stop or threading.Event()
    write = printing(write)
    conn = _opened(db_path, stop)
    if conn is None:
        return
    try:
        seen: dict[str, bool] = {}  # session id -> its end was told
        while True:
            for s in store.list_sessions(conn):
                if s["id"] not in seen:
                    seen[s["id"]] = False
                    write(printable(f"{transcript.clock(s['started_at'])}  started  {s['id']}  {s['label'] or ''}  "
                                    f"{s['transport']}").rstrip())
                if s["ended_at"] is not None and not seen[s["id"]]:
                    seen[s["id"]] = True
                    exit_status = "-" if s["exit_status"] is None else s["exit_status"]
                    write(printable(f"{transcript.clock(s['ended_at'])}  ended    {s['id']}  {s['label'] or ''}  "
                                    f"{s['c2s'] + s['s2c']} frames  exit {exit_status}"))
            if stop.wait(POLL_S):
                return
    finally:
        conn.close()


def _opened(db_path: str, stop: threading.Event, note: Callable[[str], None] = warn_stderr) -> sqlite3.Connection | None:
    """The database, once it is one: a file not there yet, or being made (empty, or SQLite without
    mcptap's tables yet), is waited for, said once; anything else is NotADatabase at once. None:
    `stop` came first."""
    said = False
    while True:
        try:
            return store.open_existing(db_path)
        except NotADatabase:
            if not _being_made(db_path):
                raise
        if not said:
            note(f"waiting for {db_path} to hold a recording (Ctrl-C stops)")
            said = True
        if stop.wait(POLL_S):
            return None


def _being_made(path: str) -> bool:
    if not os.path.exists(path):
        return True
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as fh:  # no connection of this process holds a lock on it yet
        head = fh.read(len(store.SQLITE_HEADER))
    return head in (b"", store.SQLITE_HEADER)
