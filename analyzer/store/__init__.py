"""The SQLite store: opening a file safely (WAL, busy timeout, 0600), applying the schema's
migrations, and the only SQL that writes or reads the recorded tables (see docs/contract.md)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from mcptap.store import schema
from mcptap.errors import MCPTapError, NotADatabase, SessionNotFound
from mcptap.store.schema import RECORDED_TABLES

if sys.version_info < (3, 12):
    # Python 3.11's sqlite3 binds None the slow way: a failed lookup for an adapter, then for
    # `__adapt__` and `__conform__`, for each NULL of each row (about 0.7 us each here: a third of
    # writing a notification's messages row). A registered adapter is found first; `{}.get` is a
    # builtin that gives None back, so NULL is bound as before, the same for every user of the
    # module in this process. 3.12 binds None directly.
    sqlite3.register_adapter(type(None), {}.get)

BUSY_TIMEOUT_S = 5.0
"""How long a writer waits for another process's lock before giving up (then the tee spools)."""

SQLITE_HEADER = b"SQLite format 3\x00"

# A frame row as the writers hand it over: (seq, ts, direction, raw bytes, incomplete flag[,
# redacted: JSON array text of the member paths redaction replaced]).
FrameRow = tuple
# A stderr line: (seq, ts, raw bytes, incomplete flag).
StderrRow = tuple[int, float, bytes, int]

SESSION_COLUMNS = (
    "id", "transport", "label", "started_at", "ended_at", "command", "upstream",
    "exit_status", "recorder", "host", "pid", "source", "replay_of",
)


@dataclass(frozen=True, slots=True)
class Frame:
    session_id: str
    seq: int
    ts: float
    direction: str
    raw: bytes
    incomplete: bool
    redacted: str | None = None  # JSON array text: the member paths redaction replaced


@dataclass(frozen=True, slots=True)
class StderrLine:
    session_id: str
    seq: int
    ts: float
    raw: bytes
    incomplete: bool


def stored_raw(raw: bytes) -> str | bytes:
    """TEXT when the bytes are UTF-8 without NUL (readable in datasette), else the BLOB as is.
    Either way `CAST(raw AS BLOB)` gives back the exact bytes."""
    if b"\x00" in raw:
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def stored_as_text(raw: bytes, utf8: bool = False) -> bool:
    """`stored_raw`'s rule without decoding what is known already: whether `raw` is stored as
    TEXT (UTF-8 without NUL). `utf8`: the bytes are known to be UTF-8 (encoded from text)."""
    if b"\x00" in raw:
        return False
    if utf8:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def stored_raws(lines: list[bytes]) -> list[str | bytes]:
    """`stored_raw` of each line, decoding the lot at once when it is all UTF-8 without NUL
    (the common case, several times faster than line by line)."""
    if not lines:
        return []
    joined = b"\n".join(lines)
    if b"\x00" not in joined:
        try:
            return joined.decode("utf-8").split("\n")  # a line holds no newline: one part each
        except UnicodeDecodeError:
            pass
    return [stored_raw(line) for line in lines]


def _create_private(path: str) -> None:
    """Create the database file readable by its owner only, before SQLite opens it."""
    if path == ":memory:" or os.path.exists(path):
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)


def connect(path: str | os.PathLike, *, busy_timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open (creating if needed) a database for recording, with the schema up to date.
    Raises sqlite3.Error or OSError: the recorders decide what a failure means (spool)."""
    path = os.fspath(path)
    _create_private(path)
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    ensure_schema(conn)
    return conn


def _applied_migrations(conn: sqlite3.Connection) -> set[str]:
    if not has_table(conn, schema.MIGRATIONS_TABLE):
        return set()
    rows = conn.execute(f"SELECT name FROM {schema.MIGRATIONS_TABLE} WHERE migration_set = ?", (schema.MIGRATION_SET,))
    return {r[0] for r in rows}


def rows_writer(path: str | os.PathLike, *, busy_timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A connection for writing many rows into a database whose schema is up to date (`connect`)."""
    return connect(path, busy_timeout=busy_timeout)


def frames_reader(path: str | os.PathLike) -> sqlite3.Connection:
    """A connection for reading a million frames (`iter_raw_frames`), apart from the one that
    reads everything else: a query left part read never holds up another (`open_existing`)."""
    return open_existing(path)


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Apply pending migrations under a write lock, so concurrent recorders never race."""
    if {name for name, _ in schema.MIGRATIONS} <= _applied_migrations(conn):
        return
    from sqlite_utils import Database

    with write_transaction(conn):
        schema.registry().apply(Database(conn))  # re-checks what is pending now that we hold the lock


def open_existing(path: str | os.PathLike, *, write: bool = False) -> sqlite3.Connection:
    """Open a database that must already hold mcptap's tables; NotADatabase otherwise.
    With write=True the schema is brought up to date (for import into an existing file)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise NotADatabase(f"no database at {path}")
    if os.path.isdir(path):
        raise NotADatabase(f"{path} is a directory, not a database")
    # SQLite itself reads the header: a read here (an open and a close of the file) would drop every
    # POSIX lock this process's connections hold on it (fcntl locks belong to the process, and any
    # close releases them), and another process could then take itself for the database's last
    # user and delete the WAL under them.
    if os.path.getsize(path) == 0:
        raise NotADatabase(f"{path} is not an SQLite database (an empty file)")
    try:
        if write:
            probe = sqlite3.connect(path)
            try:
                _check_columns(probe, path)
            finally:
                probe.close()
            return connect(path)
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            tables = _tables(conn)
        except sqlite3.OperationalError:
            uri = "file:" + os.path.abspath(path) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            tables = _tables(conn)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise NotADatabase(f"{path} is not an SQLite database") from None
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_CANTOPEN:
            raise NotADatabase(f"cannot read {path}: {exc}") from None
        raise NotADatabase(f"{path} is not a usable SQLite database ({exc})") from None
    missing = [t for t in RECORDED_TABLES[:2] if t not in tables]
    if missing:
        conn.close()
        raise NotADatabase(f"{path} is not an mcptap database (no {missing[0]} table)")
    _check_columns(conn, path)
    return conn


REQUIRED_COLUMNS = {"sessions": ("id", "transport", "started_at"),
                    "frames": ("session_id", "seq", "ts", "direction", "raw")}
"""What another program's tables of the same names would lack."""


def _check_columns(conn: sqlite3.Connection, path: str) -> None:
    for table, columns in REQUIRED_COLUMNS.items():
        try:
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise NotADatabase(f"{path} is not a usable SQLite database ({exc})") from None
        if have and not set(columns) <= have:
            lacking = next(c for c in columns if c not in have)
            conn.close()
            raise NotADatabase(f"{path} is not an mcptap database (its {table} table has no {lacking} column)")


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    return name in _tables(conn)


# -- writes -----------------------------------------------------------------------------------

def insert_session(conn: sqlite3.Connection, session: dict, *, or_ignore: bool = False) -> None:
    cols = [c for c in SESSION_COLUMNS if c in session]
    conn.execute(
        f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [session[c] for c in cols],
    )


_INSERT_FRAME = ("INSERT INTO frames (session_id, seq, ts, direction, raw, size, incomplete, redacted) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_STDERR = "INSERT INTO stderr_lines (session_id, seq, ts, raw, incomplete) VALUES (?, ?, ?, ?, ?)"


def frame_row(session_id: str, seq: int, ts: float, direction: str, raw: bytes, incomplete: int,
              redacted: str | None = None) -> tuple:
    return (session_id, seq, ts, direction, stored_raw(raw), len(raw), incomplete, redacted)


def stderr_row(session_id: str, seq: int, ts: float, raw: bytes, incomplete: int) -> tuple:
    return (session_id, seq, ts, stored_raw(raw), incomplete)


# Rows in their final form, built once off the wire by a recorder and inserted as they are:
# frames (session_id, seq, ts, direction, stored raw, size, incomplete, redacted),
# stderr (session_id, seq, ts, stored raw, incomplete).
FrameDbRow = tuple[str, int, float, str, "str | bytes", int, int, "str | None"]
StderrDbRow = tuple[str, int, float, "str | bytes", int]


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection):
    """BEGIN IMMEDIATE (the write lock up front, so no deadlock between writers) ... COMMIT, or
    ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def begin_write_now(conn: sqlite3.Connection) -> bool:
    """BEGIN IMMEDIATE at once, or False when another writer holds the database (the busy
    timeout is not waited out); then `commit` or `rollback`."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        return True
    except sqlite3.OperationalError as exc:
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY:  # or an extended BUSY_*
            return False
        raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def begin_write(conn: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, waiting out the busy timeout; then `commit` or `rollback`."""
    conn.execute("BEGIN IMMEDIATE")


def commit(conn: sqlite3.Connection) -> None:
    conn.execute("COMMIT")


def rollback(conn: sqlite3.Connection) -> None:
    """Undo the transaction in progress, if one is."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def append_rows(conn: sqlite3.Connection, frames: Sequence[FrameDbRow], stderr: Sequence[StderrDbRow]) -> None:
    """One transaction holding a batch of rows in their final form (the recorders' fast path)."""
    with write_transaction(conn):
        insert_rows(conn, frames, stderr)


def insert_rows(conn: sqlite3.Connection, frames: Sequence[FrameDbRow], stderr: Sequence[StderrDbRow], *,
                or_ignore: bool = False) -> None:
    """Rows in their final form, inside the caller's transaction (`or_ignore`: rows the database
    holds already are kept as they are, for a spool filling in its session)."""
    if frames:
        conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME, frames)
    if stderr:
        conn.executemany(_or_ignore(_INSERT_STDERR) if or_ignore else _INSERT_STDERR, stderr)


_INSERT_FRAME_TEXT = _INSERT_FRAME.replace("VALUES (?, ?, ?, ?, ?,", "VALUES (?, ?, ?, ?, CAST(? AS TEXT),")
"""A frame whose raw bytes are stored as TEXT (`stored_as_text`): SQLite takes the bytes as
they are, with no decoding in Python and no encoding again on the way in."""
assert _INSERT_FRAME_TEXT != _INSERT_FRAME


def insert_frame_bytes(conn: sqlite3.Connection, text_rows: Sequence[tuple], blob_rows: Sequence[tuple], *,
                       or_ignore: bool = False) -> None:
    """Frame rows (as FrameDbRow) whose raw is bytes, inside the caller's transaction (an
    import's fast path): `text_rows` stored as TEXT (their bytes must be `stored_as_text`),
    `blob_rows` as BLOB."""
    if text_rows:
        conn.executemany(_or_ignore(_INSERT_FRAME_TEXT) if or_ignore else _INSERT_FRAME_TEXT, text_rows)
    if blob_rows:
        conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME, blob_rows)


def import_writer(conn: sqlite3.Connection):
    """A connection that writes a large import into `conn`'s database file (`rows_writer`), or
    `conn` itself for an in-memory database. The caller closes it when it is not `conn`."""
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not path:
        return conn
    return rows_writer(path)


def _or_ignore(sql: str) -> str:
    return sql.replace("INSERT", "INSERT OR IGNORE", 1)


_INSERT_HTTP_FRAME = ("INSERT INTO frames (session_id, seq, ts, direction, raw, size, incomplete, exchange_id, event_id, "
                      "redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

EXCHANGE_COLUMNS = (
    "id", "session_id", "method", "url", "status", "request_type", "response_type", "mcp_session_id",
    "assigned_session", "protocol_version", "accept", "last_event_id", "content_encoding", "endpoint", "events",
    "request_headers", "response_headers", "redacted", "started_at", "request_end", "response_at", "ended_at",
    "outcome",
)


# -- text that came off the wire ------------------------------------------------------------------
# mitmproxy decodes header names and values, methods, paths and hosts as UTF-8 with
# `surrogateescape`: each byte that is not UTF-8 (obs-text such as `X-Name: caf\xe9`) becomes a lone
# surrogate, U+DC80 to U+DCFF, which SQLite cannot store. Two lossless spellings, one per kind of cell:
# - JSON cells (`request_headers`, `response_headers`): the lone surrogate as a `\udcXX` escape. The
#   JSON is valid text; `json.loads` gives the name or value back as it came, and
#   `.encode("utf-8", "surrogateescape")` its exact bytes.
# - Plain TEXT cells (`url`, the MCP header columns, `outcome`, session `upstream`, `label`,
#   `source`): each such byte percent-encoded (`%E9`), a URL's own spelling of a byte (the header
#   columns copy values whose exact bytes the headers JSON holds).

_SURROGATES = re.compile("[\ud800-\udfff]")


def json_cell(value) -> str:
    """JSON text of `value` (non-ASCII kept as it is) that SQLite can store: each lone surrogate
    written as its `\\uXXXX` escape."""
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii():  # the common case, told without a scan
        return text
    return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def text_cell(value):
    """A text cell SQLite can store: each lone surrogate of surrogate-escaped text written as the
    byte it stands for, percent-encoded (`%E9`; any other surrogate, its UTF-8 bytes so); a value
    that is not text, as it is."""
    if value.__class__ is not str or value.isascii() or not _SURROGATES.search(value):
        return value
    return _SURROGATES.sub(_percent_byte, value)


def _percent_byte(match: re.Match) -> str:
    char = match.group()
    raw = char.encode("utf-8", "surrogateescape" if "\udc80" <= char <= "\udcff" else "surrogatepass")
    return "".join(f"%{b:02X}" for b in raw)


def http_frame_row(session_id: str, seq: int, ts: float, direction: str, raw: bytes, exchange_id: str | None,
                   event_id: str | None, incomplete: int = 0, redacted: str | None = None) -> tuple:
    """A frame that crossed HTTP: the frames row with its exchange and SSE event id."""
    return (session_id, seq, ts, direction, stored_raw(raw), len(raw), incomplete, exchange_id, event_id, redacted)


def redact_row(row: tuple, redactor, raw_at: int = 4) -> tuple:
    """A stored row (frame_row or http_frame_row) with its frame redacted (analyzer/redaction/__init__.py
    FrameRedactor): the raw, its size and the `redacted` column (the last) replaced, when any
    member was (a frame stored cut keeps its full size: analyzer/wire/bounded.py)."""
    stored = row[raw_at]
    raw = stored.encode("utf-8", "surrogatepass") if isinstance(stored, str) else bytes(stored)
    new, paths = redactor.frame(raw)
    if paths is None:
        return row
    size = row[raw_at + 1] if row[raw_at + 2] == 2 else len(new)  # cut at --max-frame: its full size stays
    return row[:raw_at] + (stored_raw(new), size) + row[raw_at + 2:-1] + (json.dumps(paths),)


def insert_http_frames(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    conn.executemany(_INSERT_HTTP_FRAME, rows)


def upsert_exchange(conn: sqlite3.Connection, exchange: dict) -> None:
    """Insert an exchange, or update the columns given for one already stored."""
    cols = [c for c in EXCHANGE_COLUMNS if c in exchange]
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c != "id")
    conn.execute(
        f"INSERT INTO exchanges ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
        f"ON CONFLICT(id) DO UPDATE SET {updates}",
        [exchange[c] for c in cols],
    )


def insert_frames(conn: sqlite3.Connection, session_id: str, frames: Iterable[FrameRow], *, or_ignore: bool = False) -> None:
    conn.executemany(_or_ignore(_INSERT_FRAME) if or_ignore else _INSERT_FRAME,
                     (frame_row(session_id, *f) for f in frames))


def insert_stderr(conn: sqlite3.Connection, session_id: str, lines: Iterable[StderrRow], *, or_ignore: bool = False) -> None:
    conn.executemany(_or_ignore(_INSERT_STDERR) if or_ignore else _INSERT_STDERR,
                     (stderr_row(session_id, *e) for e in lines))


def end_session(conn: sqlite3.Connection, session_id: str, ended_at: float | None, exit_status: int | None) -> None:
    conn.execute(
        "UPDATE sessions SET ended_at = coalesce(ended_at, ?), exit_status = coalesce(exit_status, ?) WHERE id = ?",
        (ended_at, exit_status, session_id),
    )


# -- derived tables (written by analyze, never the recorded ones) ----------------------------

_INSERT_MESSAGE = ("INSERT INTO messages (session_id, frame_seq, idx, direction, kind, id, method, paired_frame, "
                   "latency_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_FINDING = ("INSERT INTO findings (session_id, frame_seq, idx, code, severity, message, related_frame) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)")


def frames_after(conn: sqlite3.Connection, session_id: str, seq: int, limit: int) -> list[tuple[int, bytes, str | None]]:
    """(seq, raw bytes, redacted) of up to `limit` frames after `seq`, in order."""
    return conn.execute("SELECT seq, CAST(raw AS BLOB), redacted FROM frames WHERE session_id = ? AND seq > ? "
                        "ORDER BY seq LIMIT ?", (session_id, seq, limit)).fetchall()


def replace_frame(conn: sqlite3.Connection, session_id: str, seq: int, raw: bytes, redacted: str) -> None:
    """Redaction (`mcptap redact`): the one change ever made to a recorded frame, and recorded."""
    conn.execute("UPDATE frames SET raw = ?, size = ?, redacted = ? WHERE session_id = ? AND seq = ?",
                 (stored_raw(raw), len(raw), redacted, session_id, seq))


def stderr_after(conn: sqlite3.Connection, session_id: str, seq: int, limit: int) -> list[tuple[int, bytes]]:
    """(seq, raw bytes) of up to `limit` stderr lines after `seq`, in order."""
    return conn.execute("SELECT seq, CAST(raw AS BLOB) FROM stderr_lines WHERE session_id = ? AND seq > ? "
                        "ORDER BY seq LIMIT ?", (session_id, seq, limit)).fetchall()


def replace_stderr(conn: sqlite3.Connection, session_id: str, seq: int, raw: bytes) -> None:
    """Redaction (`mcptap redact`) of a stderr line."""
    conn.execute("UPDATE stderr_lines SET raw = ? WHERE session_id = ? AND seq = ?", (stored_raw(raw), session_id, seq))


def replace_session_fields(conn: sqlite3.Connection, session_id: str, fields: dict) -> None:
    """Set fields of a session's row (those of SESSION_COLUMNS, never its id): an import's
    fields that came after its first frames, redaction (`mcptap redact`) of its command line."""
    cols = [c for c in fields if c in SESSION_COLUMNS and c != "id"]
    if cols:
        conn.execute(f"UPDATE sessions SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                     [*(fields[c] for c in cols), session_id])


def erase_on_write(conn: sqlite3.Connection) -> None:
    """From now on, what this connection deletes or replaces is overwritten in the file, not
    left in free pages (redaction)."""
    conn.execute("PRAGMA secure_delete = ON")


def checkpoint(conn: sqlite3.Connection) -> None:
    """Everything in the write-ahead log written into the database file, and the log emptied
    (the file alone then holds the database: to copy it)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def compact(conn: sqlite3.Connection) -> None:
    """Rewrite the file so that nothing replaced survives in free pages or the WAL. Raises
    MCPTapError when another connection keeps the write-ahead log from being emptied."""
    for step in ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
        row = conn.execute(step).fetchone()
        if row is not None and row[0] != 0:  # busy: a reader holds old pages
            raise MCPTapError("another process has the database open, so replaced bytes may remain in its "
                              "write-ahead log: run mcptap redact again once it is closed")


def clear_analysis(conn: sqlite3.Connection, session_id: str) -> None:
    for table in ("messages", "findings", "analyses"):
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))


def clear_analyses(conn: sqlite3.Connection, session_ids: Sequence[str]) -> None:
    """Drop the derived rows of many sessions in one transaction (one pass per table)."""
    with write_transaction(conn):
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS clearing (id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM clearing")
        conn.executemany("INSERT OR IGNORE INTO clearing VALUES (?)", ((s,) for s in session_ids))
        for table in ("messages", "findings", "analyses"):
            conn.execute(f"DELETE FROM {table} WHERE session_id IN (SELECT id FROM clearing)")


def insert_analysis_rows(conn: sqlite3.Connection, messages: Sequence[Sequence], findings: Sequence[Sequence]) -> None:
    if messages:
        conn.executemany(_INSERT_MESSAGE, messages)
    if findings:
        conn.executemany(_INSERT_FINDING, findings)


def insert_analysis_summary(conn: sqlite3.Connection, summary: dict, analyzed_at: float, analyzer: str) -> None:
    counts = summary["findings"]
    conn.execute(
        "INSERT OR REPLACE INTO analyses (session_id, revision, revision_source, frames, kinds, errors, warnings, "
        "infos, analyzed_at, analyzer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (summary["id"], summary["revision"], summary["revision_source"], summary["frames"],
         json.dumps(summary["kinds"], sort_keys=True), counts["error"], counts["warning"], counts["info"],
         analyzed_at, analyzer),
    )


def drop_message_index(conn: sqlite3.Connection) -> None:
    """Before a large analysis: an index built once after the rows costs less than one kept
    up to date row by row (`ensure_message_indexes` puts it back)."""
    conn.execute("DROP INDEX IF EXISTS messages_by_frame")


def ensure_message_indexes(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA threads = {os.cpu_count() or 1}")  # SQLite sorts the index's keys on all of them
    for statement in schema.DERIVED_INDEXES:
        conn.execute(statement)


def analysis_summaries(conn: sqlite3.Connection) -> dict[str, dict]:
    """Stored analysis summaries by session id ({} when nothing was analysed yet)."""
    if not has_table(conn, "analyses"):
        return {}
    conn.row_factory = sqlite3.Row
    try:
        return {r["session_id"]: dict(r) for r in conn.execute("SELECT * FROM analyses")}
    finally:
        conn.row_factory = None


def iter_raw_frames(conn: sqlite3.Connection, session_id: str) -> Iterator[tuple[int, float, str, bytes]]:
    """(seq, ts, direction, raw bytes), in seq order (bytes: no decoding on the way)."""
    return conn.execute("SELECT seq, ts, direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? ORDER BY seq",
                        (session_id,))


def iter_http_frames(conn: sqlite3.Connection, session_id: str) -> Iterator[tuple[int, float, str, bytes, str | None]]:
    """(seq, ts, direction, raw bytes, exchange id), in seq order."""
    return conn.execute("SELECT seq, ts, direction, CAST(raw AS BLOB), exchange_id FROM frames WHERE session_id = ? "
                        "ORDER BY seq", (session_id,))


def session_exchanges(conn: sqlite3.Connection, session_id: str) -> list[dict]:
    """A session's HTTP exchanges in the order they started ([] for a database without them)."""
    if not has_table(conn, "exchanges"):
        return []
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM exchanges WHERE session_id = ? ORDER BY started_at, id",
                                              (session_id,))]
    finally:
        conn.row_factory = None


def frames_per_session(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT session_id, count(*) FROM frames GROUP BY session_id"))


def count_frames(conn: sqlite3.Connection, session_ids: Sequence[str] | None = None) -> int:
    if session_ids is None:
        return conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    return sum(conn.execute("SELECT count(*) FROM frames WHERE session_id = ?", (s,)).fetchone()[0]
               for s in session_ids)


# -- reads ------------------------------------------------------------------------------------

def session_fields(conn: sqlite3.Connection, session_id: str, columns: Sequence[str]) -> tuple | None:
    """These columns (of SESSION_COLUMNS) of a session's row, or None without one."""
    unknown = set(columns) - set(SESSION_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of sessions: {sorted(unknown)}")
    return conn.execute(f"SELECT {', '.join(columns)} FROM sessions WHERE id = ?", (session_id,)).fetchone()


def stored_counts(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """Frames and stderr lines the database holds of a session."""
    return (conn.execute("SELECT count(*) FROM frames WHERE session_id = ?", (session_id,)).fetchone()[0],
            conn.execute("SELECT count(*) FROM stderr_lines WHERE session_id = ?", (session_id,)).fetchone()[0])


def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def list_sessions(conn: sqlite3.Connection, session_id: str | None = None) -> list[dict]:
    """Every session (or only `session_id`) with its frame counts per direction, oldest first."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            f"""
            SELECT s.*,
                   (SELECT count(*) FROM frames f WHERE f.session_id = s.id AND f.direction = 'c2s') AS c2s,
                   (SELECT count(*) FROM frames f WHERE f.session_id = s.id AND f.direction = 's2c') AS s2c,
                   (SELECT max(ts) FROM frames f WHERE f.session_id = s.id) AS last_ts
            FROM sessions s {"WHERE s.id = ?" if session_id is not None else ""} ORDER BY s.started_at, s.id
            """, () if session_id is None else (session_id,)
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(r) for r in rows]


def get_session(conn: sqlite3.Connection, session_id: str) -> dict:
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.row_factory = None
    if row is None:
        raise SessionNotFound(f"no session {session_id!r}")
    return dict(row)


def resolve_session(conn: sqlite3.Connection, ref: str) -> str:
    """A session named by its id, a unique id prefix, or its label (the newest with that label)."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (ref,)).fetchone():
        return ref
    by_prefix = [r[0] for r in conn.execute(
        "SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY started_at", (len(ref), ref))]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if len(by_prefix) > 1:
        shown = ", ".join(by_prefix[:5])
        raise SessionNotFound(f"{ref!r} matches {len(by_prefix)} sessions ({shown}); give more of the id")
    by_label = conn.execute(
        "SELECT id FROM sessions WHERE label = ? ORDER BY started_at DESC, id DESC LIMIT 1", (ref,)).fetchone()
    if by_label:
        return by_label[0]
    raise SessionNotFound(f"no session {ref!r} (try `mcptap sessions`)")


def iter_frames(conn: sqlite3.Connection, session_id: str) -> Iterator[Frame]:
    redacted = "redacted" if has_column(conn, "frames", "redacted") else "NULL"  # a file older than 0005, read-only
    cur = conn.execute(
        f"SELECT seq, ts, direction, CAST(raw AS BLOB), incomplete, {redacted} FROM frames WHERE session_id = ? "
        "ORDER BY seq", (session_id,),
    )
    for seq, ts, direction, raw, incomplete, paths in cur:
        yield Frame(session_id, seq, ts, direction, raw, bool(incomplete), paths)


def cut_frames(conn: sqlite3.Connection, session_id: str) -> dict[int, int]:
    """The session's frames stored cut at the capture's --max-frame: seq -> full size (by the
    partial index of migration 0006; a database without it has none)."""
    try:
        return dict(conn.execute("SELECT seq, size FROM frames INDEXED BY frames_cut "
                                 "WHERE session_id = ? AND incomplete = 2", (session_id,)))
    except sqlite3.OperationalError:  # no such index: written before frames were ever cut
        return {}


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def iter_stderr(conn: sqlite3.Connection, session_id: str) -> Iterator[StderrLine]:
    if not has_table(conn, "stderr_lines"):
        return
    cur = conn.execute(
        "SELECT seq, ts, CAST(raw AS BLOB), incomplete FROM stderr_lines WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    for seq, ts, raw, incomplete in cur:
        yield StderrLine(session_id, seq, ts, raw, bool(incomplete))


def session_ids(conn: sqlite3.Connection) -> list[str]:
    """Every session's id, oldest first (no frame is read)."""
    return [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY started_at, id")]
