"""Bounds on what capture decodes and keeps: the largest frame stored (`--max-frame`)
and content decoding (gzip, deflate, br, zstd) that is incremental, a step at a time, so that a
decompression bomb costs time, never memory.

A frame larger than the limit is stored cut at the limit: its row's `incomplete` is CUT and its
`size` is the frame's full size (the wire is never touched; only what is stored is cut)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator

DEFAULT_MAX_FRAME = 128 << 20
"""The largest frame stored whole (128 MiB); a larger one is stored cut at this many bytes."""

CUT = 2
"""`frames.incomplete` of a frame stored cut at the limit (1 is a stdio line without its newline)."""

STEP = 1 << 16
"""Decoded bytes made per decompression step."""

_FEED = 64
"""Compressed bytes handed at once to a decompressor that has no output bound of its own (the
`zstandard` package, brotli before 1.2) when it starts; halved while a step makes more than
_BURST, doubled while it makes less than STEP."""

_BURST = 1 << 20


def parse_size(text: str) -> int:
    """A size as the command line writes it: bytes, or with a K, M or G suffix (KiB, MiB, GiB)."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = 1
    if value[-1:] in ("K", "M", "G"):
        scale = 1 << (10 * ("KMG".index(value[-1]) + 1))
        value = value[:-1]
    if not value.isdigit() or int(value) * scale <= 0:
        raise ValueError(f"not a size in bytes: {text!r} (e.g. 1048576, 64K, 128M, 1G)")
    return int(value) * scale


class Decoder:
    """One content-encoded body or stream, decoded a step at a time: `decode(data)` and then
    `flush()` give the decoded bytes as pieces of about STEP bytes. Raises ValueError for an
    encoding it does not know and zlib.error (or the codec's own error) for data it cannot read."""

    def __init__(self, encoding: str):
        name = encoding.strip().lower()
        self.name = name
        self._zlib = self._brotli = self._zstd = self._pep784 = None
        self._raw_deflate_tried = False
        self._feed = _FEED
        if name in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif name == "deflate":
            self._zlib = zlib.decompressobj()
        elif name == "br":
            import brotli  # a mitmproxy dependency

            self._brotli = brotli.Decompressor()
            try:
                self._brotli.process(b"", output_buffer_limit=STEP)
                self._brotli_limit = True
            except TypeError:  # brotli before 1.2: no output bound, fed a little at a time
                self._brotli_limit = False
        elif name == "zstd":
            self._pep784 = _pep784_zstd()
            if self._pep784 is None:
                import zstandard  # mitmproxy 11's

                self._zstd = zstandard.ZstdDecompressor().decompressobj()
        else:
            raise ValueError(f"content-encoding {encoding!r} cannot be decoded")

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._zlib is not None:
            yield from self._zlib_steps(data)
        elif self._brotli is not None:
            yield from self._brotli_steps(data)
        elif self._pep784 is not None:
            d = self._pep784
            while not d.eof:
                out = d.decompress(data, STEP)
                data = b""
                if out:
                    yield out
                if d.needs_input:
                    return
        else:
            yield from self._fed(self._zstd.decompress, data)

    def _fed(self, decompress, data: bytes) -> Iterator[bytes]:
        """A decompressor without an output bound, fed a few bytes at a time."""
        at = 0
        while at < len(data):
            out = decompress(data[at:at + self._feed])
            at += self._feed
            if len(out) > _BURST:
                self._feed = max(1, self._feed // 2)
            elif len(out) < STEP:
                self._feed = min(1 << 16, self._feed * 2)
            if out:
                yield out

    def flush(self) -> Iterator[bytes]:
        if self._zlib is not None:
            yield from self._zlib_steps(b"")
        elif self._brotli is not None and self._brotli_limit:
            yield from self._brotli_steps(b"", flush=True)

    def _zlib_steps(self, data: bytes) -> Iterator[bytes]:
        d = self._zlib
        while not d.eof:
            try:
                out = d.decompress(data, STEP)
            except zlib.error:
                if self.name != "deflate" or self._raw_deflate_tried:
                    raise
                self._raw_deflate_tried = True  # "deflate" as many servers send it: raw, no zlib header
                d = self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            if out or data:
                self._raw_deflate_tried = True  # the zlib header was read
            data = d.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < STEP:
                return

    def _brotli_steps(self, data: bytes, flush: bool = False) -> Iterator[bytes]:
        b = self._brotli
        if not self._brotli_limit:
            yield from self._fed(b.process, data)
            return
        out = b.process(data, output_buffer_limit=STEP)
        if out:
            yield out
        while not b.is_finished() and (flush or not b.can_accept_more_data()):
            out = b.process(b"", output_buffer_limit=STEP)
            if not out:
                return
            yield out


def _pep784_zstd():
    """A zstd decompressor with an output bound (PEP 784: Python 3.14's compression.zstd, or
    its backport, which mitmproxy 12 uses), or None."""
    try:
        from compression import zstd
    except ImportError:
        try:
            from backports import zstd
        except ImportError:
            return None
    return zstd.ZstdDecompressor()


class Kept:
    """Bytes gathered up to a limit; what comes beyond it is only counted."""

    __slots__ = ("limit", "parts", "kept", "size")

    def __init__(self, limit: int):
        self.limit = limit
        self.parts: list[bytes] = []
        self.kept = 0
        self.size = 0  # everything offered

    def add(self, data: bytes) -> None:
        self.size += len(data)
        room = self.limit - self.kept
        if room > 0:
            piece = data if len(data) <= room else data[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def value(self) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)

    def take(self) -> bytes:
        """The value, given up: the pieces go now, and nothing more is kept (a `passing`
        callable may outlive its use: mitmproxy holds it as long as the flow)."""
        value = self.value()
        self.parts, self.limit = [], 0
        return value

    def passing(self, downstream=None) -> Callable[[bytes], bytes]:
        """A mitmproxy `stream` callable that keeps each chunk as it passes, then hands it to
        `downstream` (a `stream` set before: a callable, or True/False/None to pass it as it is)."""
        add = self.add

        def keep(chunk: bytes) -> bytes:
            add(chunk)
            return downstream(chunk) if callable(downstream) else chunk

        return keep

    @property
    def cut(self) -> bool:
        return self.size > self.kept


def decode_body(raw: bytes, encoding: str | None, limit: int) -> tuple[bytes, int]:
    """A whole body as stored: decoded (when it is content-encoded and can be) up to `limit`
    bytes, and its full decoded size. A body that cannot be decoded is stored as it came (as
    mitmproxy's `get_content(strict=False)` gives it), cut at the limit too."""
    name = (encoding or "").strip().lower()
    if name not in ("", "identity", "none"):
        kept = Kept(limit)
        try:
            decoder = Decoder(name)
            for piece in decoder.decode(raw):
                kept.add(piece)
            for piece in decoder.flush():
                kept.add(piece)
        except Exception:  # noqa: BLE001 - any codec's error: a body that is not what it says is data
            pass
        else:
            return kept.value(), kept.size
    return (raw if len(raw) <= limit else raw[:limit]), len(raw)


def cut_row(row: tuple, size: int) -> tuple:
    """A frame row (store.frame_row / store.http_frame_row: size at 5, incomplete at 6) of a
    frame stored cut: its full size and the CUT mark."""
    return row[:5] + (size, CUT) + row[7:]
