"""The pandas API's calls that make a database (mcptap.data: open_db, import_log, analyze,
export_log: what `mcptap import`, `analyze` and `export` do, from a notebook) and that analyse
one in memory (operations: the paired view; cost: what each server costs in a model's context):
each a call of the library (mcptap.api), its answer as a DataFrame."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence

import pandas as pd

from mcptap import store
from mcptap.api import databases, exporting, judging, servers  # not the package: its HTML report reads this module

SEVERITIES = ("error", "warning", "info")


def open_db(path: str | os.PathLike, *, fresh: bool = False) -> str:
    """The database at `path`, with mcptap's tables (created when there is none); its path, for
    the other calls. `fresh`: a database made anew, for an audit each run repeats: an SQLite file
    there (and its -wal and -shm) is removed first; any other file is refused (ValueError)."""
    return databases.open_db(path, fresh=fresh)


def _path(db: str | os.PathLike | sqlite3.Connection) -> str:
    if isinstance(db, sqlite3.Connection):
        return store.path_of(db)
    return os.fspath(db)


def import_log(db: str | os.PathLike | sqlite3.Connection, path: str | os.PathLike, *, new_id: bool = False,
               keep_credentials: bool = False, format: str | None = None) -> pd.DataFrame:
    """Bring a log into the database as `mcptap import` does (frame-log JSONL, a mitmproxy dump,
    a HAR file, a bundle; .gz and .zst decompressed; all of it or nothing, credentials redacted
    unless kept): one row per session imported, its `id`, `name` (as the log called it), `frames`,
    `stderr_lines`, `merged`. `format`: a format of the registry (mcptap.report.formats: jsonl, har,
    mitm, bundle) to read it as; default: the one its content shows."""
    imported = [s for _, found, _ in databases.import_files(_path(db), [os.fspath(path)], new_id=new_id,
                                                       keep_credentials=keep_credentials, read_as=format)
                for s in found]
    return pd.DataFrame([(s.id, s.name, s.frames, s.stderr_lines, s.merged) for s in imported],
                        columns=["id", "name", "frames", "stderr_lines", "merged"])


def analyze(db: str | os.PathLike | sqlite3.Connection, *, session: str | None = None,
            revision: str | None = None) -> pd.DataFrame:
    """Run `mcptap analyze` over the database (or one `session`; `revision`: the one to judge a
    session by when it does not say; the policy of ./mcptap.toml when there is one, as the
    command's), storing its messages and findings: one row per session analysed, its `id`,
    `revision`, `revision_source`, `frames`, `errors`, `warnings`, `infos`."""
    with judging.analyze(_path(db), sessions=[session] if session else None, revision=revision) as done:
        rows = [(s["id"], s["revision"], s["revision_source"], s["frames"], *(s["findings"].get(level, 0)
                 for level in SEVERITIES)) for s in done.report.sessions]
    return pd.DataFrame(rows, columns=["id", "revision", "revision_source", "frames", "errors", "warnings", "infos"])


def export_log(db: str | os.PathLike | sqlite3.Connection, path: str | os.PathLike, *,
               session: str | Sequence[str] | None = None, format: str = "jsonl") -> int:
    """Write sessions (ids, id prefixes or labels; None: all) as `mcptap export` does, in a format
    of the registry (mcptap.report.formats: jsonl, the default, every recorded table of each, which
    `import_log` gives back; otlp; har), file mode 0600, compressed by a `.gz` or `.zst` name.
    The number of frames written."""
    return exporting.export_log(_path(db), path, sessions=session, format=format)


OPERATION_COLUMNS = ["session_id", "seq", "idx", "ts", "direction", "method", "id", "response_seq", "response_ts",
                     "latency_s", "outcome", "error_code", "error_message", "notes", "findings", "operation", "parent",
                     "step", "operation_latency_s"]


def operations(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None) -> pd.DataFrame:
    """The paired view (mcptap.analysis.paired, the one the exports use): one row per request
    with its answer frame and time, latency, outcome (ok, error, tool_error, unanswered,
    cancelled) and error; one per notification of its own (outcome notification); `notes` the
    progress and cancellation notifications that belong to it, `findings` the codes of its
    findings. Its logical operation (analysis/logical_operations.py): `operation` the frame of the
    operation's first request (`seq`, `seq:idx` in a batch), `parent` the frame of the request it
    continues, `step` (request, retry, task-poll, task-result, task-cancel, task-status,
    notification), `operation_latency_s` on the row whose answer ends the operation, from its first
    request (`groupby("operation")` gathers an input_required request and its retries, a task and
    its polls). Each session is analysed in memory (nothing stored), one at a time."""
    import orjson

    from mcptap.analysis import mcp

    rows = [(sid, op.seq, op.idx, op.ts, op.direction, op.method,
             None if op.id is mcp.ABSENT else orjson.dumps(op.id).decode(), op.response_seq, op.response_ts,
             op.latency_s, op.outcome, op.error_code, op.error_message, len(op.notes), [f.code for f in op.findings],
             op.operation, op.parent, op.step, op.operation_latency_s)
            for sid, op in databases.operations(_path(db), [session] if isinstance(session, str) else session)]
    frame = pd.DataFrame(rows, columns=OPERATION_COLUMNS).sort_values(["session_id", "seq"], kind="stable")
    for column in ("ts", "response_ts"):
        frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    for column in ("session_id", "direction", "method", "outcome"):
        frame[column] = frame[column].astype("category")
    frame["response_seq"] = frame["response_seq"].astype("Int64")
    frame["parent"] = frame["parent"].astype("Int64")
    frame["step"] = frame["step"].astype("category")
    frame["operation_latency_s"] = frame["operation_latency_s"].astype("float64")
    return frame.reset_index(drop=True)


def cost(db: str | sqlite3.Connection, *, session: str | Sequence[str] | None = None) -> pd.DataFrame:
    """What each session's server costs in a model's context (`mcptap cost`): one row per
    definition (kind instructions, tool, prompt, resource, resource template: bytes, tokens,
    model_tokens) and per tool's results (kind result: count, bytes and tokens p50 and max), with
    the session, server, version and the tokenizer (`attrs["tokenizer"]`, `attrs["estimate"]`)."""
    figures = servers.cost(_path(db), [session] if isinstance(session, str) else session)
    rows = []
    kinds = (("tools", "tool"), ("prompts", "prompt"), ("resources", "resource"),
             ("resourceTemplates", "resource template"))
    for s in figures["sessions"]:
        where = {"session_id": s["session"], "server": s["server"], "version": s["version"]}
        defs = s["definitions"]
        if defs["instructions"] is not None:
            m = defs["instructions"]
            rows.append({**where, "kind": "instructions", "name": None, **m, "model_tokens": m["tokens"]})
        for key, kind in kinds:
            for d in defs.get(key, ()):
                rows.append({**where, "kind": kind, "name": d["name"], "bytes": d["bytes"], "tokens": d["tokens"],
                             "model_tokens": d.get("model_tokens", d["tokens"])})
        for r in s["results"]:
            rows.append({**where, "kind": "result", "name": r["tool"], "count": r["count"],
                         "bytes_p50": r["bytes_p50"], "bytes_max": r["bytes_max"], "tokens_p50": r["tokens_p50"],
                         "tokens_max": r["tokens_max"]})
    columns = ["session_id", "server", "version", "kind", "name", "bytes", "tokens", "model_tokens", "count",
               "bytes_p50", "bytes_max", "tokens_p50", "tokens_max"]
    table = pd.DataFrame(rows, columns=columns)
    numbers = columns[5:]
    table[numbers] = table[numbers].astype("Int64")
    table.attrs.update(tokenizer=figures["tokenizer"], estimate=figures["estimate"])
    return table
