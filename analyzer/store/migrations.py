"""The recorded tables of the contract (`sessions`, `frames`, `stderr_lines`) as registered,
re-runnable migrations (store.ensure_schema applies them), each recorded in the bookkeeping
table sqlite-utils' `Migrations` keeps, so either tool reads the same history. Add a migration
to MIGRATIONS; never edit a shipped one.

Only the standard library's sqlite3 is used here: sqlite-utils imports pandas and numpy, which
would cost the stdio tee and every new database half a second and 45 MB."""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Callable


MIGRATION_SET = "mcptap"
MIGRATIONS_TABLE = "_sqlite_migrations"  # sqlite-utils' own bookkeeping table


def recorded_tables(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS sessions (
            id          TEXT PRIMARY KEY,  -- UUIDv7 for recordings; the log's name for imports
            transport   TEXT NOT NULL,     -- stdio | http | sse | import
            label       TEXT,              -- --name, or the imported log's session name
            started_at  REAL NOT NULL,     -- Unix seconds
            ended_at    REAL,              -- NULL while recording (or when unknown)
            command     TEXT,              -- stdio: the server's argv as a JSON array
            upstream    TEXT,              -- http: the proxied URL
            exit_status INTEGER,           -- stdio: the server's exit status (128+N for signal N)
            recorder    TEXT,              -- what wrote the session (mcptap version and command)
            host        TEXT,              -- machine name of the recorder
            pid         INTEGER,           -- recorder's process id
            source      TEXT               -- import: the file it came from
        )
        """
    )
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS frames (
            session_id  TEXT NOT NULL REFERENCES sessions(id),
            seq         INTEGER NOT NULL,  -- 1, 2, ... in observed order within the session
            ts          REAL NOT NULL,     -- Unix seconds when the frame's last byte passed
            direction   TEXT NOT NULL CHECK (direction IN ('c2s', 's2c')),
            raw         BLOB NOT NULL,     -- exact bytes: TEXT when valid UTF-8, else BLOB
            size        INTEGER NOT NULL,  -- length of raw in bytes
            incomplete  INTEGER NOT NULL DEFAULT 0,  -- 1: stream ended before the newline
            PRIMARY KEY (session_id, seq)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS stderr_lines (
            session_id  TEXT NOT NULL REFERENCES sessions(id),
            seq         INTEGER NOT NULL,  -- 1, 2, ... within the session's stderr
            ts          REAL NOT NULL,
            raw         BLOB NOT NULL,     -- as in frames: TEXT when valid UTF-8, else BLOB
            incomplete  INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, seq)
        )
        """
    )


DERIVED_DDL = (
    """
    CREATE TABLE IF NOT EXISTS messages (
        session_id   TEXT NOT NULL,
        frame_seq    INTEGER NOT NULL,  -- the frame (frames.seq)
        idx          INTEGER,           -- NULL: the frame as a whole; 0, 1, ...: a batch element
        direction    TEXT NOT NULL,     -- c2s | s2c
        kind         TEXT NOT NULL,     -- request | notification | response | error | batch | invalid | unparseable
        id           TEXT,              -- the JSON-RPC id as JSON text, as written
        method       TEXT,
        paired_frame INTEGER,           -- request <-> its response
        latency_s    REAL               -- seconds from the request to its response
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS findings (
        session_id    TEXT NOT NULL,
        frame_seq     INTEGER,           -- the frame that is wrong
        idx           INTEGER,           -- the batch element, if one
        code          TEXT NOT NULL,     -- stable finding code (mcptap analyze --rules)
        severity      TEXT NOT NULL,     -- error | warning | info
        message       TEXT NOT NULL,
        related_frame INTEGER            -- the other frame involved, if any
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS analyses (
        session_id      TEXT PRIMARY KEY,
        revision        TEXT,            -- the MCP revision the session was judged by (NULL: unknown)
        revision_source TEXT NOT NULL,   -- initialize | meta | header | option | unknown
        frames          INTEGER NOT NULL,
        kinds           TEXT NOT NULL,   -- JSON object: kind -> frames
        errors          INTEGER NOT NULL,
        warnings        INTEGER NOT NULL,
        infos           INTEGER NOT NULL,
        analyzed_at     REAL NOT NULL,
        analyzer        TEXT NOT NULL    -- mcptap version
    )
    """,
)
"""What `mcptap analyze` writes (docs/contract.md), replaced session by session at each run."""

DERIVED_INDEXES = (
    "CREATE INDEX IF NOT EXISTS messages_by_frame ON messages (session_id, frame_seq, idx)",
    "CREATE INDEX IF NOT EXISTS findings_by_frame ON findings (session_id, frame_seq)",
)


def derived_tables(db: sqlite3.Connection) -> None:
    for statement in DERIVED_DDL + DERIVED_INDEXES:
        db.execute(statement)


def http_tables(db: sqlite3.Connection) -> None:
    """HTTP capture: one row per HTTP exchange (credentials redacted unless kept), and on each
    frame the exchange it crossed in and, for an SSE event, the event's id."""
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS exchanges (
            id                TEXT PRIMARY KEY,  -- the exchange (mitmproxy's flow id, or the import's)
            session_id        TEXT REFERENCES sessions(id),  -- NULL: no MCP session could be told
            method            TEXT NOT NULL,     -- GET | POST | DELETE | ...
            url               TEXT NOT NULL,     -- token query parameters redacted
            status            INTEGER,           -- NULL: no answer
            request_type      TEXT,              -- request Content-Type
            response_type     TEXT,              -- response Content-Type
            mcp_session_id    TEXT,              -- Mcp-Session-Id the request carried, else the one answered
            assigned_session  TEXT,              -- Mcp-Session-Id on the answer (the server assigning one)
            protocol_version  TEXT,              -- MCP-Protocol-Version on the request
            accept            TEXT,              -- Accept on the request
            last_event_id     TEXT,              -- Last-Event-ID on the request (resuming a stream)
            content_encoding  TEXT,              -- the answer's Content-Encoding (frames are stored decoded)
            endpoint          TEXT,              -- legacy HTTP+SSE: the endpoint the stream announced
            events            INTEGER NOT NULL DEFAULT 0,  -- SSE events on the answer (priming events too)
            request_headers   TEXT,              -- JSON array of [name, value], credentials redacted
            response_headers  TEXT,              -- the same for the answer
            redacted          TEXT,              -- JSON array of what was redacted (header names, query keys)
            started_at        REAL NOT NULL,     -- the request's first byte
            request_end       REAL,              -- the request's last byte
            response_at       REAL,              -- the answer's headers
            ended_at          REAL,              -- the answer's last byte, or when it broke off
            outcome           TEXT               -- complete | error: ... | open at shutdown
        )
        """
    )
    db.execute("CREATE INDEX IF NOT EXISTS exchanges_by_session ON exchanges (session_id, started_at)")
    columns = {row[1] for row in db.execute("PRAGMA table_info(frames)").fetchall()}
    if "exchange_id" not in columns:
        db.execute("ALTER TABLE frames ADD COLUMN exchange_id TEXT")  # the exchange the frame crossed in
    if "event_id" not in columns:
        db.execute("ALTER TABLE frames ADD COLUMN event_id TEXT")  # an SSE event's id


def replay_link(db: sqlite3.Connection) -> None:
    """`mcptap replay` records the replay as a session of its own, linked to the one it replayed."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)").fetchall()}
    if "replay_of" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN replay_of TEXT")  # the session this one replayed


def frame_redactions(db: sqlite3.Connection) -> None:
    """Redaction of frame members (docs/contract.md, Redaction) is recorded on the frame."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(frames)").fetchall()}
    if "redacted" not in columns:
        db.execute("ALTER TABLE frames ADD COLUMN redacted TEXT")  # JSON array of the member paths replaced


def cut_frames(db: sqlite3.Connection) -> None:
    """Frames stored cut at the capture's --max-frame (analyzer/wire/bounded.py): `incomplete` 2, `size`
    the frame's full size; an index of them alone, so that the analysis finds them at no cost."""
    db.execute("CREATE INDEX IF NOT EXISTS frames_cut ON frames (session_id, seq) WHERE incomplete = 2")


def exchange_bodies(db: sqlite3.Connection) -> None:
    """HTTP exchanges that are not MCP (OAuth discovery, registration, authorization, token) and
    HTTP errors whose body is not JSON-RPC are stored with their bodies (credentials redacted) and
    labelled by role; what `mcptap proxy` rewrote on the way to the client is kept beside them."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(exchanges)").fetchall()}
    # role: auth-discovery | auth-register | auth-authorize | auth-token | auth-challenge | http-error (NULL: MCP);
    # request_body / response_body: as they crossed (credentials redacted), when they are no frame;
    # rewritten: JSON, what mcptap proxy changed on the way to the client (both versions)
    for name in ("role", "request_body", "response_body", "rewritten"):
        if name not in columns:
            db.execute(f"ALTER TABLE exchanges ADD COLUMN {name} TEXT")


def runs(db: sqlite3.Connection) -> None:
    """A session knows the run it belongs to (the sessions of one host process, or of one HTTP client
    within a window: addons/runs.py) and the client that started it (JSON: the host process, or the
    HTTP client's address and User-Agent)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)").fetchall()}
    for name in ("run", "client"):
        if name not in columns:
            db.execute(f"ALTER TABLE sessions ADD COLUMN {name} TEXT")
    db.execute("CREATE INDEX IF NOT EXISTS sessions_by_run ON sessions (run, started_at)")


def finding_groups(db: Database) -> None:
    """Each finding code's group (the rule registry's), written by every analysis, so that a filter
    selects findings by group (`finding.group == "security"`) from the store alone."""
    db.execute(
        """
        CREATE TABLE IF NOT EXISTS finding_groups (
            code  TEXT PRIMARY KEY,  -- a finding code (findings.code)
            grp   TEXT NOT NULL      -- its rule's group (mcptap analyze --rules)
        )
        """
    )


def live_telemetry(db: sqlite3.Connection) -> None:
    """What a capture's live telemetry (`--otlp-endpoint`) did for a session: JSON with the spans
    the collector accepted and what was dropped (NULL: none was sent)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)").fetchall()}
    if "telemetry" not in columns:
        db.execute("ALTER TABLE sessions ADD COLUMN telemetry TEXT")


RECORDED_TABLES = ("sessions", "frames", "stderr_lines", "exchanges")

MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("0001_recorded_tables", recorded_tables),
    ("0002_derived_tables", derived_tables),
    ("0003_http_tables", http_tables),
    ("0004_replay_link", replay_link),
    ("0005_frame_redactions", frame_redactions),
    ("0006_cut_frames", cut_frames),
    ("0007_exchange_bodies", exchange_bodies),
    ("0008_runs", runs),
    ("0009_finding_groups", finding_groups),
    ("0010_live_telemetry", live_telemetry),
]


MIGRATIONS_TABLE_SQL = (
    'CREATE TABLE IF NOT EXISTS "_sqlite_migrations" (\n   "id" INTEGER PRIMARY KEY,\n   "migration_set" TEXT,\n'
    '   "name" TEXT,\n   "applied_at" TEXT\n)',
    'CREATE UNIQUE INDEX IF NOT EXISTS "idx__sqlite_migrations_migration_set_name"\n'
    '    ON "_sqlite_migrations" ("migration_set", "name")',
)
"""sqlite-utils' own bookkeeping table and its index, as its `Migrations` creates them."""


def apply_pending(conn: sqlite3.Connection) -> None:
    """Apply, in order, each migration of MIGRATIONS not recorded as applied, and record it (its
    name and the UTC time, as sqlite-utils does). The caller holds the write lock: what is pending
    is read under it."""
    for statement in MIGRATIONS_TABLE_SQL:
        conn.execute(statement)
    done = {row[0] for row in conn.execute(
        f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ?", (MIGRATION_SET,))}
    for name, migrate in MIGRATIONS:
        if name in done:
            continue
        migrate(conn)
        conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                     (MIGRATION_SET, name, str(datetime.datetime.now(datetime.timezone.utc))))
