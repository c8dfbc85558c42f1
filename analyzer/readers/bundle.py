"""`mcptap import FILE.zip` of a bundle `mcptap bundle` wrote (analyzer/report/bundle.py): its
`frames.jsonl` and `http.har` imported as `mcptap import` imports each, in one go; the
analysis and the report in it are left to be made again. A zip that is no bundle, or holds
members of a size it does not say, is an ImportFormatError."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Callable

from mcptap.errors import ImportFormatError, MCPTapError

BUNDLE_FORMAT = "mcptap-bundle"
MEMBERS = ("frames.jsonl", "http.har")
MAX_MEMBER = 16 << 30
"""The most one member may unpack to."""
MAX_RATIO = 200
"""How many times its packed size a member may unpack to (JSON logs pack about ten to one; a
bomb, a thousand)..."""
RATIO_FLOOR = 64 << 20
"""... once past this many bytes."""


def is_bundle(head: bytes) -> bool:
    """Whether a file's first bytes are a zip's, as a bundle is."""
    return head.startswith(b"PK\x03\x04")


def import_bundle(path: str, import_one: Callable[[str, str], list]) -> list:
    """Each data member of the bundle at `path` unpacked to a private temporary folder and
    given to `import_one(member path, the name to tell it by)`; the imported sessions of all. A member that unpacks past
    MAX_MEMBER, or past MAX_RATIO times its packed size (once beyond RATIO_FLOOR), is refused as
    it grows, and so is a member that is itself a bundle; what goes wrong is told of `path` and the
    member's name, never of the temporary copy."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "bundle.json" not in names:
                raise ImportFormatError(f"{path}: a zip file, but not an mcptap bundle (no bundle.json)")
            try:
                manifest = json.loads(z.read("bundle.json"))
            except (ValueError, RecursionError):
                raise ImportFormatError(f"{path}: its bundle.json is not JSON") from None
            if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
                raise ImportFormatError(f"{path}: its bundle.json is not an mcptap bundle's")
            found = []
            with tempfile.TemporaryDirectory(prefix="mcptap-bundle-") as work:
                for name in MEMBERS:
                    if name not in names:
                        continue
                    target = os.path.join(work, name)
                    _unpack(path, z, z.getinfo(name), target)
                    try:
                        found.extend(import_one(target, f"{path}:{name}"))
                    except MCPTapError as exc:
                        raise ImportFormatError(str(exc).replace(target, f"{path}:{name}").replace(work, path)) from None
            return found
    except zipfile.BadZipFile as exc:
        raise ImportFormatError(f"{path}: not a readable zip file ({exc})") from None


def _bound(info: zipfile.ZipInfo) -> int:
    """The most bytes member `info` may unpack to."""
    return min(MAX_MEMBER, max(RATIO_FLOOR, MAX_RATIO * info.compress_size))


def _unpack(path: str, z: zipfile.ZipFile, info: zipfile.ZipInfo, target: str) -> None:
    """Member `info` written to `target`, its size checked as it grows."""
    name, bound = info.filename, _bound(info)
    if info.file_size > bound:
        raise ImportFormatError(f"{path}: {name} would unpack to {info.file_size} bytes from "
                                f"{info.compress_size} (more than {bound}: not read)")
    with z.open(info) as src, open(target, "wb") as dst:
        done = 0
        while chunk := src.read(1 << 20):
            if done == 0 and is_bundle(chunk):
                raise ImportFormatError(f"{path}: {name} is itself a bundle (a bundle inside a bundle is not read)")
            done += len(chunk)
            if done > bound or done > info.file_size:
                raise ImportFormatError(f"{path}: {name} unpacks to more than it says (past {min(bound, info.file_size)} "
                                        "bytes: not read)")
            dst.write(chunk)
