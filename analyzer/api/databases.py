"""The library's calls that fill and read a database: open one, import logs into it (each file
whole or not at all), name sessions, and the paired view of each."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mcptap.errors import MCPTapError
from mcptap.api.meters import Meter, _quiet


def open_db(path: str | os.PathLike, *, fresh: bool = False) -> str:
    """The database at `path`, with mcptap's tables (created when there is none); its path, for
    the other calls. `fresh`: a database made anew, for an audit each run repeats: an SQLite file
    there (and its -wal and -shm) is removed first; any other file is refused (ValueError)."""
    from mcptap import store

    path = os.fspath(path)
    if fresh and os.path.exists(path):
        with open(path, "rb") as fh:
            if fh.read(len(store.SQLITE_HEADER)) != store.SQLITE_HEADER:
                raise ValueError(f"{path} is not an SQLite database: left as it is")
        for name in (path, path + "-wal", path + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(name)
    store.connect(path).close()
    return path


def import_files(db: str | os.PathLike, files: Sequence[str], *, new_id: bool = False, keep_credentials: bool = False,
                 redaction=None, max_frame: int | None = None, read_as: str | None = None, locate: bool = False,
                 warn: Callable[[str], None] | None = None, meter: Meter | None = None,
                 by_content: bool = False) -> Iterator[tuple]:
    """Bring logs into the database as `mcptap import` does: frame-log JSONL, mitmproxy dumps, HAR
    files, bundles (`-` is stdin; .gz and .zst are decompressed into a private temporary copy),
    each file whole or not at all, credentials redacted on the way in (`redaction`, a Redaction;
    `keep_credentials` keeps HTTP credentials). `read_as`: a format of the registry (jsonl, har,
    mitm, bundle) for every file; default the one its content shows. `locate`: each session's
    `lines` says where its frames were. Yields, file by file as each is imported, (the file as
    given, its ImportedSession objects, its registry Format); an error names the file as given.
    What can fail before the first file is read (stdin given twice, a decompression, a format, the
    database) fails in this call; the rest as the files are read. `by_content`: a file whose
    content shows no format fails (its extension is not taken instead)."""
    steps = _importing(os.fspath(db), list(files), new_id=new_id, keep_credentials=keep_credentials,
                       redaction=redaction, max_frame=max_frame, read_as=read_as, locate=locate, warn=warn,
                       meter=meter or _quiet, by_content=by_content)
    next(steps)  # the copies made, the formats known, the database open
    return steps


def _importing(db: str, files: list[str], *, new_id, keep_credentials, redaction, max_frame, read_as, locate, warn,
               meter, by_content) -> Iterator:
    import sqlite3
    import tempfile

    from mcptap import outfile, store
    from mcptap.readers import importer
    from mcptap.report import formats

    if files.count("-") > 1:
        raise MCPTapError("- (stdin) can be read once")
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-"))
        plain = {}
        for n, path in enumerate(files):
            os.mkdir(os.path.join(folder, str(n)), 0o700)  # a folder of its own: two files may have one name
            plain[path] = stack.enter_context(outfile.frames_in(path, os.path.join(folder, str(n))))
        stack.enter_context(outfile.named_as_given(plain))
        if by_content:
            for path in files:
                importer.detect_format(plain[path])
        how = {path: formats.reader_for(plain[path], read_as) for path in files}
        try:
            conn = store.connect(db)
        except (sqlite3.Error, OSError) as exc:
            raise MCPTapError(f"cannot open {db}: {exc}") from None
        stack.callback(conn.close)
        yield None
        for path in files:
            with meter(f"importing {os.path.basename(path)}", total_bytes=os.path.getsize(plain[path])) as shown:
                imported = importer.import_file(conn, plain[path], new_id=new_id, warn=warn or (lambda m: None),
                                                progress=shown.update, keep_credentials=keep_credentials,
                                                redaction=redaction, max_frame=max_frame, locate=locate, origin=path,
                                                kind=how[path].reader)
            yield path, imported, how[path]


def session_of_log(log: str, db: str | None = None, *, cleanup: contextlib.ExitStack,
                   warn: Callable[[str], None] | None = None) -> tuple[str, str]:
    """A frame log (or capture; `-` is stdin) that holds one session, imported into `db`, or into
    a temporary database `cleanup` removes when `db` is None: (the database, the session id)."""
    import tempfile

    if db is None:
        db = os.path.join(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="mcptap-")), "log.db")
    imported = [s for _, found, _ in import_files(db, [log], warn=warn, by_content=True) for s in found]
    if len(imported) != 1:
        raise MCPTapError(f"{log} holds {len(imported)} sessions: import it with `mcptap import` and name one")
    return db, imported[0].id


def sessions(db: str, named: Sequence[str] | None = None) -> list[str]:
    """The ids of the sessions named (ids, handles, @N, id prefixes, labels), else of every one."""
    from mcptap import store

    conn = store.open_existing(db)
    try:
        return store.resolve_sessions(conn, list(named)) if named else store.session_ids(conn)
    finally:
        conn.close()


def session_list(db: str) -> list[dict]:
    """Every session as `mcptap sessions --format json` gives it (id, handle, label, transport,
    revision, times, frames, finding counts once analysed, exit status), oldest first."""
    from mcptap import store
    from mcptap.report import listing

    conn = store.open_existing(db)
    try:
        return listing.session_objects(conn)
    finally:
        conn.close()


def operations(db: str, named: Sequence[str] | None = None) -> Iterator[tuple[str, Any]]:
    """The paired view of each session named (default every one), analysed in memory (nothing
    stored), one at a time: (session id, operation) for each request with its answer and each
    notification of its own (analysis/paired.py, analysis/operations.py)."""
    from mcptap import store
    from mcptap.engine import session_view as paired

    conn = store.open_existing(db)
    try:
        for sid in store.resolve_sessions(conn, named) or store.session_ids(conn):
            for op in paired.session_view(conn, sid).operations:
                yield sid, op
    finally:
        conn.close()
