"""`mcptap bundle`: sessions packed into one zip to attach to a bug report. The sessions go
through `mcptap import` with the default redaction into a database of their own (frame-log
JSONL for stdio and imported sessions, HAR for HTTP ones, so exchanges and headers come along),
then every frame, stderr line, command line and HTTP header is checked to hold nothing the
default redaction would still replace; the zip holds `frames.jsonl`, `http.har`, the analysis as
`analysis.json` and `analysis.sarif`, the self-contained `report.html` (with mcptap[notebook])
and `bundle.json`: mcptap's version and, per session, the client's and server's names and
versions as its initialize recorded them. `mcptap import FILE.zip` reads it back
(analyzer/readers/bundle.py)."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import tempfile
import zipfile
from collections.abc import Callable

import mcptap
from mcptap import extras, outfile, store
from mcptap.errors import MCPTapError
from mcptap.outfile import WriteOptions
from mcptap.readers import exporter, importer
from mcptap.redaction import FrameRedactor, Redaction, Redactor
from mcptap.redaction.scrub import changed_exchange

BUNDLE_FORMAT = "mcptap-bundle"
HTTP_TRANSPORTS = ("http", "sse")


class SecretLeft(MCPTapError):
    """Something in the bundle would still be replaced by the default redaction."""


def _infos(conn: sqlite3.Connection, sid: str) -> dict:
    """The client's and server's `{name, version}` from the session's initialize (or a
    2026-07-28 request's `_meta` clientInfo)."""
    from mcptap.engine import session_view as views

    found: dict = {}
    for op in views.session_view(conn, sid).operations:
        params = op.params
        info = params.get("clientInfo") or op.meta.get("io.modelcontextprotocol/clientInfo")
        if isinstance(info, dict) and "client" not in found:
            found["client"] = {k: info.get(k) for k in ("name", "version") if isinstance(info.get(k), str)}
        result = op.response.get("result") if isinstance(op.response, dict) else None
        info = result.get("serverInfo") if isinstance(result, dict) else None
        if isinstance(info, dict) and "server" not in found:
            found["server"] = {k: info.get(k) for k in ("name", "version") if isinstance(info.get(k), str)}
    return found


def check_redacted(conn: sqlite3.Connection, session_ids: list[str]) -> int:
    """Raise SecretLeft when a frame, stderr line, command line or HTTP exchange (headers, URL,
    bodies: the one redaction of an exchange) of the sessions holds something the default redaction would still replace (it leaves its own stand-ins as
    they are); the number of items checked."""
    frames, headers = FrameRedactor(Redaction()), Redactor(keep=False)
    checked = 0
    for sid in session_ids:
        for f in store.iter_frames(conn, sid):
            checked += 1
            if frames.frame(f.raw)[0] != f.raw:
                raise SecretLeft(f"session {sid} frame {f.seq} still holds a credential after redaction")
        for line in store.iter_stderr(conn, sid):
            checked += 1
            if frames.text(line.raw)[0] != line.raw:
                raise SecretLeft(f"session {sid} stderr line {line.seq} still holds a credential after redaction")
        command = store.get_session(conn, sid).get("command")
        if command and frames.command(json.loads(command))[0] != json.loads(command):
            raise SecretLeft(f"session {sid}: its command line still holds a credential after redaction")
        for e in store.session_exchanges(conn, sid):
            checked += 1
            left = changed_exchange(headers, e)
            if left is not None:
                what = ", ".join(sorted(set(left) - {"redacted"}))
                raise SecretLeft(f"session {sid} exchange {e['id']}: its {what} still holds a credential")
    return checked


def write(db: str, output: str, sessions: list[str] | None = None, *,
          warn: Callable[[str], None] = lambda m: None) -> dict:
    """Write the bundle of `sessions` (ids, prefixes or labels; default all) of `db` to `output`;
    its manifest."""
    from mcptap import engine
    from mcptap.report import har, sarif
    import mcptap.report as report

    source = store.open_existing(db)
    try:
        ids = store.resolve_sessions(source, sessions) or store.session_ids(source)
        transports = {sid: store.get_session(source, sid)["transport"] for sid in ids}
        with tempfile.TemporaryDirectory(prefix="mcptap-bundle-") as work:
            http = [sid for sid in ids if transports[sid] in HTTP_TRANSPORTS]
            plain = [sid for sid in ids if sid not in http]
            files = []
            if plain:
                path = os.path.join(work, "frames.jsonl")
                with open(path, "w", encoding="utf-8") as fh:
                    exporter.export(source, fh, WriteOptions(sessions=plain))
                files.append(path)
            if http:
                extras.need("proxy", "a bundle of HTTP sessions")
                path = os.path.join(work, "http.har")
                with open(path, "wb") as fh:
                    har.write(source, fh, WriteOptions(sessions=http))
                files.append(path)
            clean = os.path.join(work, "bundle.db")
            conn = store.connect(clean)
            try:
                for path in files:
                    importer.import_file(conn, path, warn=warn)
                kept = store.session_ids(conn)
                check_redacted(conn, kept)
                manifest = {"format": BUNDLE_FORMAT, "version": 1, "mcptap": mcptap.__version__,
                            "python": platform.python_version(), "platform": platform.platform(),
                            "sessions": [{"id": sid, **{k: store.get_session(conn, sid).get(k)
                                                        for k in ("label", "transport", "started_at")},
                                          **_infos(conn, sid)} for sid in kept]}
                out_frames = os.path.join(work, "out.jsonl")
                with open(out_frames, "w", encoding="utf-8") as fh:
                    exporter.export(conn, fh, WriteOptions(sessions=[
                        s for s in kept if store.get_session(conn, s)["transport"] not in HTTP_TRANSPORTS]))
                out_har = os.path.join(work, "out.har")
                kept_http = [s for s in kept if store.get_session(conn, s)["transport"] in HTTP_TRANSPORTS]
                if kept_http:
                    with open(out_har, "wb") as fh:
                        har.write(conn, fh, WriteOptions(sessions=kept_http))
            finally:
                conn.close()
            result = engine.analyze(clean)
            with open(os.path.join(work, "analysis.json"), "w", encoding="utf-8") as fh:
                report.write_json(result, fh)
            with open(os.path.join(work, "analysis.sarif"), "w", encoding="utf-8") as fh:
                sarif.write(result, fh, root=work, shared=True)
            members = {"bundle.json": None, "analysis.json": "analysis.json", "analysis.sarif": "analysis.sarif"}
            if os.path.getsize(out_frames):
                members["frames.jsonl"] = "out.jsonl"
            if kept_http:
                members["http.har"] = "out.har"
            try:
                extras.need("notebook", "report.html")
                from mcptap.report import html as htmlreport

                htmlreport.write(clean, os.path.join(work, "report.html"))
                members["report.html"] = "report.html"
            except extras.MissingExtra as exc:
                manifest["report"] = str(exc)
            with outfile.bytes_out(output, binary="a bundle") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as z:
                for name, local in members.items():
                    if local is None:
                        z.writestr(name, _dumps(manifest))
                    else:
                        z.write(os.path.join(work, local), name)
        return manifest
    finally:
        source.close()


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
