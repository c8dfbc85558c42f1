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

from mcptap.errors import ImportFormatError

BUNDLE_FORMAT = "mcptap-bundle"
MEMBERS = ("frames.jsonl", "http.har")
MAX_MEMBER = 16 << 30  # what one member may unpack to


def is_bundle(head: bytes) -> bool:
    return head.startswith(b"PK\x03\x04")


def import_bundle(path: str, import_one: Callable[[str], list]) -> list:
    """Each data member of the bundle at `path` unpacked to a private temporary folder and
    given to `import_one(member path)`; the imported sessions of all."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "bundle.json" not in names:
                raise ImportFormatError(f"{path}: a zip file, but not an mcptap bundle (no bundle.json)")
            try:
                manifest = json.loads(z.read("bundle.json"))
            except ValueError:
                raise ImportFormatError(f"{path}: its bundle.json is not JSON") from None
            if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
                raise ImportFormatError(f"{path}: its bundle.json is not an mcptap bundle's")
            found = []
            with tempfile.TemporaryDirectory(prefix="mcptap-bundle-") as work:
                for name in MEMBERS:
                    if name not in names:
                        continue
                    info = z.getinfo(name)
                    if info.file_size > MAX_MEMBER:
                        raise ImportFormatError(f"{path}: {name} would unpack to {info.file_size} bytes")
                    target = os.path.join(work, name)
                    with z.open(info) as src, open(target, "wb") as dst:
                        left = MAX_MEMBER
                        while chunk := src.read(1 << 20):
                            left -= len(chunk)
                            if left < 0:
                                raise ImportFormatError(f"{path}: {name} unpacks to more than it says")
                            dst.write(chunk)
                    found.extend(import_one(target))
            return found
    except zipfile.BadZipFile as exc:
        raise ImportFormatError(f"{path}: not a readable zip file ({exc})") from None
