"""The registry of file formats: each format is one registered object (name, file extensions,
what it holds, a writer and a reader where one exists, the extra it needs), found by `mcptap
export --format`, `mcptap analyze --format`, `mcptap import` and the pandas API alike; adding a
format touches its own module and this table. Every writer takes `(source, out, options)`: a
database connection (a database's path for a folder format) or an analysis Report, where it
writes, and the caller's choices (outfile.WriteOptions). Writers are named as "module:function"
and imported when used, so a format's dependencies load only for it. Output streams: `-` is
stdout, a name ending `.gz` or `.zst` is compressed as it is written, any file is created 0600."""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from mcptap import extras, outfile
from mcptap.outfile import NO_OPTIONS, WriteOptions
from mcptap.errors import ImportFormatError, MCPTapError

FRAMES, ANALYSIS, AUDIT = "frames", "analysis", "audit"
"""What a format holds: a database's sessions (export, import), an analysis' report, or its
security reading (`mcptap audit`)."""


@dataclass(frozen=True)
class Format:
    name: str
    holds: str
    extensions: tuple[str, ...]
    summary: str
    writer: str | None = None  # "module:function"
    reader: str | None = None  # the importer's name for the format it detects (readers/importer.py)
    extra: str | None = None
    binary: bool = False  # the writer writes bytes
    transports: tuple[str, ...] = ()  # sessions it holds (empty: every transport)
    stream: bool = True  # written as one stream (`-o -`, .gz, .zst); else a folder
    located: bool = False  # an import of it says on which line of the file each frame was
    filters: bool = False  # its writer writes only a display filter's frames (WriteOptions.keep)

    def write(self, source, out, options: WriteOptions = NO_OPTIONS):
        """The writer's answer for `source` written to `out` (what it returns: frames, lines or
        entries written)."""
        return self.write_function()(source, out, options)

    def write_function(self):
        if self.extra is not None:
            extras.need(self.extra, f"--format {self.name}")
        module, _, function = self.writer.partition(":")
        return getattr(importlib.import_module(module), function)


REGISTRY: dict[tuple[str, str], Format] = {}


def register(fmt: Format) -> Format:
    REGISTRY[(fmt.holds, fmt.name)] = fmt
    return fmt


for _fmt in (
    Format("jsonl", FRAMES, (".jsonl",), "frame-log JSONL: sessions, frames and stderr lines byte for byte",
           "mcptap.readers.exporter:export", reader="framelog", located=True, filters=True),
    Format("otlp", FRAMES, (".otlp.jsonl", ".json"), "OTLP JSON (as a collector's file exporter writes it): spans "
           "and duration histograms by OpenTelemetry's MCP semantic conventions", "mcptap.report.otlp:write_json",
           extra="otel", binary=True),
    Format("har", FRAMES, (".har",), "HAR 1.2: each HTTP exchange an entry, headers as stored, bodies whole",
           "mcptap.report.har:write", reader="har", binary=True, transports=("http", "sse")),
    Format("parquet", FRAMES, ("/",), "a Parquet dataset (a folder, Hive-partitioned by day; many databases' "
           "sessions in one)", "mcptap.store.dataset:export_database", extra="parquet", stream=False),
    Format("mitm", FRAMES, (".mitm", ".flows"), "mitmproxy flow dumps (mitmdump -w)", None, reader="flows",
           extra="proxy"),
    Format("bundle", FRAMES, (".zip",), "a bug-report bundle (mcptap bundle): its frame log, analysis and report",
           None, reader="bundle"),
    Format("table", ANALYSIS, (".txt",), "the readable report: sessions, findings, response times per method",
           "mcptap.report:write_table"),
    Format("json", ANALYSIS, (".json",), "the analysis as one JSON document", "mcptap.report:write_json"),
    Format("jsonl", ANALYSIS, (".jsonl",), "one finding per line", "mcptap.report:write_jsonl"),
    Format("sarif", ANALYSIS, (".sarif",), "SARIF 2.1.0, each frame a location", "mcptap.report:write_sarif"),
    Format("junit", ANALYSIS, (".xml",), "JUnit XML: a suite per session, a case per rule, a failure per finding",
           "mcptap.report.junit:write"),
    Format("table", AUDIT, (".txt",), "the security findings: severity, server, tool, finding, where, what "
           "followed, evidence", "mcptap.report.audit:write_table"),
    Format("json", AUDIT, (".json",), "the security findings as one JSON document, each with its server, tool "
           "and the calls that followed", "mcptap.report.audit:write_json"),
    Format("sarif", AUDIT, (".sarif",), "SARIF 2.1.0 with GitHub's security-severity on every rule",
           "mcptap.report.audit:write_sarif"),
):
    register(_fmt)


class UnknownFormat(MCPTapError):
    """No format of that name holds what is asked for."""


def get(name: str, holds: str) -> Format:
    fmt = REGISTRY.get((holds, name))
    if fmt is None or fmt.writer is None:
        raise UnknownFormat(f"no {holds} format {name!r}; known: {', '.join(names(holds))}")
    return fmt


def formats(holds: str) -> list[Format]:
    return [f for (h, _), f in REGISTRY.items() if h == holds]


def names(holds: str, *, readable: bool = False) -> list[str]:
    """The names of the formats that write what `holds` names (that `mcptap import` reads, with
    `readable`): the choices the commands offer."""
    return [f.name for f in formats(holds) if (f.reader if readable else f.writer)]


def reader_for(path: str, name: str | None = None) -> Format:
    """The format a file is imported as: the one named (`mcptap import --from`), else the one its
    content shows (readers/importer.py detect_format: a bundle's zip, a frame log's first line,
    HAR's `log`, a flow dump's tnetstring), else the one its name's extension gives."""
    from mcptap.readers import importer

    readable = [f for f in formats(FRAMES) if f.reader]
    if name is not None:
        fmt = next((f for f in readable if f.name == name), None)
        if fmt is None:
            raise UnknownFormat(f"no format {name!r} to import; known: {', '.join(names(FRAMES, readable=True))}")
        return fmt
    try:
        kind = importer.detect_format(path)
    except ImportFormatError:
        by_name = [f for f in readable for ext in f.extensions if path.lower().endswith(ext)]
        if not by_name or not os.path.isfile(path) or not os.path.getsize(path):
            raise
        return by_name[0]
    return next(f for f in readable if f.reader == kind)


def holding(transport: str | None) -> list[str]:
    """The frames formats that hold a session of this transport."""
    return [f.name for f in formats(FRAMES) if f.writer and (not f.transports or transport in f.transports)]


@contextlib.contextmanager
def output(path: str | None, *, binary: bool) -> Iterator[IO]:
    """Where a writer writes: stdout for None or `-`, else `path` created 0600, compressed when
    its name ends `.gz` or `.zst` (analyzer/outfile.py); text (UTF-8) or bytes as the writer wants."""
    with (outfile.bytes_out(path) if binary else outfile.frames_out(path)) as out:
        yield out
