"""Files written from recorded frames (`export -o`, `analyze -o`, `report -o`): created readable
and writable by their owner only (0600), as the database and the spool are, since they hold what
the traffic held. A file of frames may also be `-` (stdout, or stdin when read) and is compressed
or decompressed by its name's extension: `.gz` (the standard library's gzip) and `.zst`
(Zstandard: the standard library's `compression.zstd` from Python 3.14, else the `zstandard`
package, `pip install 'mcptap[zstd]'`)."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

from mcptap.errors import MCPTapError, OutputError

MODE = 0o600
STDIO = "-"
COMPRESSIONS = (".gz", ".zst")



@dataclass(frozen=True)
class WriteOptions:
    """What the caller chose, handed to every writer of the format registry (report/formats.py),
    which all take `(source, out, options)`: a database connection (frames formats; a database's
    path for a folder format) or an analysis Report, where they write, and these. Each writer
    reads the ones that concern it."""
    sessions: Sequence[str] = ()  # frames formats: the sessions written, in this order
    progress: Callable[[int], None] | None = None  # frames formats: called with the frames written since
    keep: dict[str, set[int]] | None = None  # frame log: only these frames of each session (a display filter's)
    content: bool = False  # OTLP: tool arguments and results and prompt arguments too
    color: bool = False  # the table: coloured
    per_code: int | None = None  # the table: findings of one code listed per session (None: its default)
    root: str | None = None  # SARIF: the folder relative URIs start from
    sources: dict[str, Any] | None = None  # SARIF: sessions imported from files -> their file
    fail_on: str = "error"  # JUnit: the severity a failing case reaches


NO_OPTIONS = WriteOptions()

@contextlib.contextmanager
def private_text(path: str) -> Iterator[TextIO]:
    """`path` opened for writing UTF-8 text, truncated, mode 0600 (a regular file that was
    there before is made 0600 too, before anything is written); `-` is stdout, as on every
    command that writes a file. OSError on opening is an OutputError naming the file; one while
    writing propagates as it is."""
    if path == STDIO:
        yield sys.stdout
        sys.stdout.flush()
        return
    fd = _private_fd(path)
    try:
        fh = os.fdopen(fd, "w", encoding="utf-8")
    except OSError as exc:
        os.close(fd)
        raise OutputError(f"cannot make {path} private: {exc.strerror or exc}") from None
    with fh:
        yield fh


def _private_fd(path: str) -> int:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, MODE)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not a terminal, a pipe or /dev/null
            os.fchmod(fd, MODE)
    except OSError as exc:
        os.close(fd)
        raise OutputError(f"cannot make {path} private: {exc.strerror or exc}") from None
    return fd


def compression(path: str) -> str | None:
    """'.gz', '.zst' or None, by the name's extension (any case)."""
    lower = path.lower()
    return next((ext for ext in COMPRESSIONS if lower.endswith(ext)), None)


def _zstd():
    """The module that reads and writes Zstandard here, or an MCPTapError saying what to install."""
    try:
        from compression import zstd  # Python 3.14+

        return zstd
    except ImportError:
        pass
    try:
        import zstandard

        return zstandard
    except ImportError:
        raise MCPTapError("a .zst file needs Zstandard: pip install 'mcptap[zstd]' (or use .gz)") from None


@contextlib.contextmanager
def frames_out(path: str | None) -> Iterator[TextIO]:
    """Where a file of frames is written as UTF-8 text: stdout for None or `-`, else `path`
    (private_text), compressed when its name ends in .gz or .zst."""
    if path is None or path == STDIO:
        yield sys.stdout
        sys.stdout.flush()
        return
    if compression(path) is None:
        with private_text(path) as fh:
            yield fh
        return
    with bytes_out(path) as packed, io.TextIOWrapper(packed, encoding="utf-8", write_through=False) as text:
        yield text


@contextlib.contextmanager
def bytes_out(path: str | None, *, binary: str | None = None) -> Iterator[BinaryIO]:
    """Where a file is written as bytes: stdout's for None or `-`, else `path` created 0600,
    compressed when its name ends in .gz or .zst. `binary`: what is written, when it is not text
    (a zip): refused on a terminal, in one line, rather than drawn there."""
    if path is None or path == STDIO:
        if binary is not None and sys.stdout.isatty():
            raise OutputError(f"{binary} is binary: give -o FILE, or pipe it (-o - | ...)")
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    kind = compression(path)
    zstd = _zstd() if kind == ".zst" else None  # before the file is made
    raw = os.fdopen(_private_fd(path), "wb")
    with raw:
        if kind is None:
            yield raw
            return
        if zstd is None:
            packed: BinaryIO = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
        elif hasattr(zstd, "ZstdCompressor") and hasattr(zstd.ZstdCompressor(), "stream_writer"):
            packed = zstd.ZstdCompressor().stream_writer(raw, closefd=False)
        else:
            packed = zstd.ZstdFile(raw, "wb")
        with packed:
            yield packed


@contextlib.contextmanager
def named_as_given(copies: dict[str, str]) -> Iterator[None]:
    """An MCPTapError about a plain copy (frames_in) names the file as the user gave it."""
    try:
        yield
    except MCPTapError as exc:
        message = str(exc)
        for given, plain in copies.items():
            if plain != given:
                message = message.replace(plain, given)
        if message == str(exc):
            raise
        raise MCPTapError(message) from None


@contextlib.contextmanager
def frames_in(path: str, folder: str) -> Iterator[str]:
    """A file of frames as a plain file on disk to read: `path` itself, or for `-` (stdin) and a
    .gz or .zst file a private copy in `folder`, decompressed block by block and named as the
    original without its compression extension (`log.jsonl.gz` -> `log.jsonl`; stdin: `stdin`)."""
    kind = compression(path)
    if path != STDIO and kind is None:
        yield path
        return
    name = "stdin" if path == STDIO else os.path.basename(path)[: -len(kind)] or "log"
    plain = os.path.join(folder, name)
    zstd = _zstd() if kind == ".zst" else None
    try:
        with contextlib.ExitStack() as opened:
            if path == STDIO:
                source: BinaryIO = sys.stdin.buffer
            else:
                source = opened.enter_context(open(path, "rb"))
                if zstd is None:
                    source = opened.enter_context(gzip.GzipFile(fileobj=source, mode="rb"))
                elif hasattr(zstd, "ZstdDecompressor") and hasattr(zstd.ZstdDecompressor(), "stream_reader"):
                    source = opened.enter_context(zstd.ZstdDecompressor().stream_reader(source))
                else:
                    source = opened.enter_context(zstd.ZstdFile(source, "rb"))
            with os.fdopen(_private_fd(plain), "wb") as copy:
                shutil.copyfileobj(source, copy, 1 << 20)
    except FileNotFoundError:
        raise MCPTapError(f"no file {path}") from None
    except IsADirectoryError:
        raise MCPTapError(f"{path} is a directory") from None
    except (OSError, EOFError) as exc:
        raise MCPTapError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except Exception as exc:  # zstandard.ZstdError and the like: a file that is not what its name says
        if type(exc).__name__ in ("ZstdError", "ZstdDecompressionError", "BadGzipFile"):
            raise MCPTapError(f"cannot read {path}: {exc}") from None
        raise
    yield plain
