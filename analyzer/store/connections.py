"""Opening a database file safely (WAL, busy timeout, 0600), applying the schema's migrations,
and transactions: every connection to the store is made here."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sqlite3
import sys

from mcptap.store import migrations
from mcptap.errors import MCPTapError, NotADatabase
from mcptap.store.migrations import RECORDED_TABLES

if sys.version_info < (3, 12):
    # Python 3.11's sqlite3 binds None the slow way: a failed lookup for an adapter, then for
    # `__adapt__` and `__conform__`, for each NULL of each row (about 0.7 us each here: a third of
    # writing a notification's messages row). A registered adapter is found first; `{}.get` is a
    # builtin that gives None back, so NULL is bound as before, the same for every user of the
    # module in this process. 3.12 binds None directly.
    sqlite3.register_adapter(type(None), {}.get)

BUSY_TIMEOUT_S = 5.0
"""How long a writer waits for another process's lock before giving up (then the tee spools)."""


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
    if not has_table(conn, migrations.MIGRATIONS_TABLE):
        return set()
    rows = conn.execute(f"SELECT name FROM {migrations.MIGRATIONS_TABLE} WHERE migration_set = ?", (migrations.MIGRATION_SET,))
    return {r[0] for r in rows}


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Apply pending migrations under a write lock, so concurrent recorders never race."""
    if {name for name, _ in migrations.MIGRATIONS} <= _applied_migrations(conn):
        return
    with write_transaction(conn):
        migrations.apply_pending(conn)  # re-checks what is pending now that we hold the lock


def readonly_uri(path: str | os.PathLike) -> str:
    """The SQLite URI that opens the file at `path` read-only (mode=ro): the absolute path quoted
    as a file URI by the standard library (pathlib), so a `%`, `?` or `#` in a name is part of
    the name, never an escape or the start of the query."""
    return pathlib.Path(os.path.abspath(path)).as_uri() + "?mode=ro"


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
            conn = sqlite3.connect(readonly_uri(path), uri=True, isolation_level=None, check_same_thread=False)
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


def import_writer(conn: sqlite3.Connection):
    """A connection that writes a large import into `conn`'s database file (`connect`), or
    `conn` itself for an in-memory database. The caller closes it when it is not `conn`."""
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not path:
        return conn
    return connect(path)


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


def path_of(conn: sqlite3.Connection) -> str:
    """The file a connection has open (its main database)."""
    return next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main")


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def path_of(conn: sqlite3.Connection) -> str:
    """The file of a connection's main database ("" for one in memory)."""
    return next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main")
