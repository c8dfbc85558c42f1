"""The library's calls that write sessions elsewhere: a file in a format of the registry (a frame
log, OTLP JSON, HAR), a Parquet dataset of many databases, or spans and metrics sent to an
OpenTelemetry collector over OTLP/HTTP."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from mcptap.errors import MCPTapError
from mcptap.api.meters import Meter, _quiet


def export_log(db: str | os.PathLike, path: str | os.PathLike | None, *,
               sessions: str | Sequence[str] | None = None, format: str = "jsonl", where: str | None = None,
               content: bool = False, meter: Meter | None = None) -> int:
    """Write sessions (ids, id prefixes or labels; None: all) as `mcptap export` does, in a format
    of the registry (jsonl, the default, every recorded table of each, which `import_files` gives
    back; otlp; har), file mode 0600, compressed by a `.gz` or `.zst` name (None or `-`: stdout):
    the frames written. `where`: a display filter choosing the frames (a frame log only);
    `content`: OTLP spans carry tool arguments and results as stored. A session of a transport the
    format does not hold is refused (MCPTapError), before anything is written."""
    from mcptap import store
    from mcptap.outfile import WriteOptions
    from mcptap.report import formats

    chosen = formats.get(format, formats.FRAMES)
    if not chosen.stream:
        raise ValueError(f"{format} writes a folder, not a file: use `export_dataset`")
    db = os.fspath(db)
    written = [0]
    conn = store.open_existing(db)
    try:
        named = store.resolve_sessions(conn, sessions)
        ids = named or store.session_ids(conn)
        for sid in ids if chosen.transports else ():
            transport = store.get_session(conn, sid)["transport"]
            if transport not in chosen.transports:
                raise MCPTapError(f"session {sid} is {transport}: {format} holds only {', '.join(chosen.transports)} "
                                  f"sessions; export it as {' or '.join(formats.holding(transport))}")
        keep = None
        if where is not None:
            if not chosen.filters:
                raise MCPTapError(f"a filter selects frames for a frame log (jsonl), not {format}")
            from mcptap.engine import selection

            keep = selection.select(db, where, ids if named else None)
        total = store.count_frames(conn, ids) if keep is None else sum(len(v) for v in keep.values())
        with (meter or _quiet)("exporting", total) as shown, \
                formats.output(None if path is None else os.fspath(path), binary=chosen.binary) as out:
            def counted(n: int) -> None:
                written[0] += n
                shown.advance(n)

            chosen.write(conn, out, WriteOptions(sessions=ids, progress=counted, keep=keep, content=content))
        return written[0]
    finally:
        conn.close()


def is_database(path: str | os.PathLike) -> bool:
    """Whether `path` is a file that begins as an SQLite database does."""
    from mcptap import store

    try:
        with open(path, "rb") as fh:
            return fh.read(len(store.SQLITE_HEADER)) == store.SQLITE_HEADER
    except OSError:
        return False


def export_dataset(output: str | os.PathLike, databases: Sequence[str], *, sessions: Sequence[str] | None = None,
                   meter: Meter | None = None) -> int:
    """Every database's sessions (or those `sessions` names, in whichever database holds them)
    into the Parquet dataset at the folder `output`, partitioned by day (a session exported again
    replaces its rows), as `mcptap export --format parquet` does: the sessions exported. Needs
    `mcptap[parquet]` (MissingExtra); a session no database holds is an MCPTapError."""
    from mcptap import extras, store
    from mcptap.errors import SessionNotFound
    from mcptap.outfile import WriteOptions

    extras.need("parquet", "--format parquet")
    from mcptap.store import dataset

    def holds(conn, ref: str) -> bool:
        try:
            store.resolve_session(conn, ref)
        except SessionNotFound:
            return False
        return True

    output = os.fspath(output)
    exported = 0
    for path in databases:
        conn = store.open_existing(path)
        try:
            ids = [store.resolve_session(conn, s) for s in sessions if holds(conn, s)] if sessions else None
            total = store.count_frames(conn, ids)
        finally:
            conn.close()
        if ids == []:
            continue
        with (meter or _quiet)(f"exporting {os.path.basename(path)}", total) as shown:
            exported += len(dataset.export_database(path, output, WriteOptions(sessions=ids or (),
                                                                                progress=shown.advance)))
    if sessions and not exported:
        raise MCPTapError(f"no session {sessions[0]} in {', '.join(databases)}")
    return exported


def send_otlp(db: str | os.PathLike, endpoint: str, *, sessions: str | Sequence[str] | None = None,
              headers: Mapping[str, str] | None = None, content: bool = False,
              warn: Callable[[str], None] | None = None, meter: Meter | None = None) -> tuple[int, int, int]:
    """Send the sessions' spans and metrics (OpenTelemetry's MCP semantic conventions) to the
    OTLP/HTTP collector at `endpoint` (URL/v1/traces, URL/v1/metrics), with `headers`, as `mcptap
    export --otlp-endpoint` does: (spans, histogram data points the collector accepted, sessions
    sent). `content`: tool arguments and results as stored. A partial success is said through
    `warn`. Needs `mcptap[otel]` (MissingExtra)."""
    from mcptap import extras, store

    if not endpoint.startswith(("http://", "https://")):
        raise MCPTapError(f"--otlp-endpoint {endpoint!r}: give an http:// or https:// URL")
    extras.need("otel", "--otlp-endpoint")
    from mcptap.report import otlp, otlp_http

    conn = store.open_existing(os.fspath(db))
    try:
        ids = store.resolve_sessions(conn, sessions) or store.session_ids(conn)
        with (meter or _quiet)("exporting", store.count_frames(conn, ids)) as shown:
            spans, points = otlp_http.send(otlp.requests(conn, ids, content=content, progress=shown.advance),
                                           endpoint, dict(headers or {}), warn=warn or (lambda m: None))
    finally:
        conn.close()
    return spans, points, len(ids)
