"""The SQLite store: opening a file safely (WAL, busy timeout, 0600), applying the schema's
migrations, and the only SQL that writes or reads the recorded tables (see docs/contract.md).
In parts: rows (the row shapes), connections (files, migrations, transactions), recorded (the
recorded tables), derived (what analyze writes), queries (the faces' own reads), migrations,
writer, journal, cells. Everything is used as `store.NAME`, from here."""

from __future__ import annotations

from mcptap.store.rows import (  # noqa: F401
    EXCHANGE_COLUMNS, Frame, FrameDbRow, FrameRow, SESSION_COLUMNS, SQLITE_HEADER, StderrDbRow, StderrLine,
    StderrRow, frame_row, http_frame_row, json_cell, redact_row, stderr_row, stored_as_text, stored_raw,
    stored_raws, text_cell,
)
from mcptap.store.connections import (  # noqa: F401
    BUSY_TIMEOUT_S, REQUIRED_COLUMNS, begin_write, begin_write_now, checkpoint, commit, compact, connect,
    ensure_schema, erase_on_write, has_column, has_table, import_writer, open_existing, path_of, rollback,
    write_transaction,
)
from mcptap.store.recorded import (  # noqa: F401
    _INSERT_FRAME, append_rows, count_frames, cut_frames, end_session, exchange_exists, frame_refs, frames_after,
    frames_per_session,
    get_session, insert_exchange, insert_frame_bytes, insert_frames, insert_http_frames, insert_rows, insert_session,
    insert_stderr, iter_frames, iter_http_frames, iter_raw_frames, iter_stderr, list_sessions, replace_frame,
    replace_session_fields, replace_stderr, session_exchanges, session_exists, session_fields,
    session_ids, set_frame_refs, stderr_after, stored_counts, upsert_exchange,
)
from mcptap.store.recorded import frames_by_seq, frames_mentioning, frames_of_methods  # noqa: F401
from mcptap.store.recorded import frames_read_by_seq, frames_read_if_marked  # noqa: F401
from mcptap.store.recorded import set_telemetry  # noqa: F401
from mcptap.store.sessionrefs import completions, handles, resolve_session, resolve_sessions  # noqa: F401
from mcptap.store.derived import (  # noqa: F401
    analysis_summaries, clear_analyses, clear_analysis, drop_message_index, ensure_message_indexes,
    insert_analysis_rows, insert_analysis_summary, write_finding_groups,
)
