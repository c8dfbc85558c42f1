"""The importer's readers of the files that are not a frame log, by the kind readers/importer.py
detect_format names (the formats registry's `reader`): a bundle (each data member imported
again as a file) and an HTTP capture (a HAR file or a mitmproxy dump, read by mitmproxy through
the recorder addon). Each takes (conn, path, kind, again: the importer's import_file, options)."""

from __future__ import annotations

import os

from mcptap import extras

CAPTURE_NAMES = {"flows": "mitmproxy flow dump", "har": "HAR file"}


def read_bundle(conn, path: str, kind: str, again, *, new_id, warn, progress, keep_credentials, redaction, redactor,
                locate, max_frame) -> list:
    from mcptap.readers.bundle import import_bundle

    return import_bundle(path, lambda member, shown: list(again(
        conn, member, new_id=new_id, warn=lambda message: warn(message.replace(member, shown)),
        keep_credentials=keep_credentials, redaction=redaction, locate=locate, max_frame=max_frame)))


def read_capture(conn, path: str, kind: str, again, *, new_id, warn, progress, keep_credentials, redaction,
                 redactor, locate, max_frame) -> list:
    extras.need("proxy", f"importing {os.path.basename(path)} (a {CAPTURE_NAMES.get(kind, kind)})")
    from mcptap.readers.http_capture import import_capture

    found = import_capture(conn, path, kind, new_id=new_id, keep_credentials=keep_credentials, warn=warn,
                           redactor=redactor, max_frame=max_frame)
    if progress is not None:
        progress(sum(s.frames for s in found), os.path.getsize(path))
    return found


READERS = {"bundle": read_bundle, "har": read_capture, "flows": read_capture}
