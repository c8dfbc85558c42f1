"""Files replaced whole or not at all: each new content is written to a temporary file beside its
destination, created 0600 and given the destination's mode and owner before any byte is written,
synced, then renamed over it. A config is renamed over only while it still holds the bytes it
was read with (compared just before the rename), and it is held open from that read (`Held`): after
the rename, the file it was (the old inode, which a host's write in place reaches until the rename)
must still hold those bytes and the path must be the new file; else the host's version is put back
and the caller gets an error. A host that wrote it meanwhile keeps its write."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from mcptap.errors import MCPTapError


class Staged:
    """A temporary file beside `dest` holding its new content, until `commit` or `discard`."""

    def __init__(self, dest: Path, data: bytes, like: os.stat_result):
        self.dest = dest
        self.tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(self.tmp, flags, 0o600)
        except OSError as exc:
            raise MCPTapError(f"cannot write {dest}: {exc.strerror or exc}") from None
        try:
            _give_mode(fd, self.tmp, like)  # before any byte: a 0600 file's secrets are never readable by others
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            done = os.fstat(fd)
            self.identity = (done.st_dev, done.st_ino)
        except OSError as exc:
            os.close(fd)
            self.discard()
            raise MCPTapError(f"cannot write {dest}: {exc.strerror or exc}") from None
        os.close(fd)

    def commit(self) -> None:
        try:
            os.replace(self.tmp, self.dest)
        except OSError as exc:
            self.discard()
            raise MCPTapError(f"cannot write {self.dest}: {exc.strerror or exc}") from None
        self.tmp = None

    def discard(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None


def _give_mode(fd: int, path: Path, like: os.stat_result) -> None:
    if hasattr(os, "fchown"):
        try:
            os.fchown(fd, like.st_uid, like.st_gid)
        except OSError:  # another owner's file: this process may not give it away; the mode still holds
            pass
    if hasattr(os, "fchmod"):
        os.fchmod(fd, like.st_mode & 0o7777)
    else:
        os.chmod(path, like.st_mode & 0o7777)


class Held:
    """The file at `path` open for reading, from the read whose bytes a rewrite is based on: what
    it holds now (`now`), even once another file was renamed over its path."""

    def __init__(self, path: Path):
        flags = os.O_RDONLY | getattr(os, "O_BINARY", 0)
        try:
            self.fd = os.open(path, flags)
        except OSError as exc:
            raise MCPTapError(f"cannot read {path}: {exc.strerror or exc}") from None

    def now(self) -> bytes:
        chunks, offset = [], 0
        while True:
            chunk = os.pread(self.fd, 1 << 20, offset)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            offset += len(chunk)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def is_file(path: Path, identity: tuple[int, int]) -> bool:
    """Whether `path` is the file of this (device, inode)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == identity


def unchanged(path: Path, read: bytes) -> bool:
    """Whether `path` still holds `read`."""
    try:
        return path.read_bytes() == read
    except OSError:
        return False
