"""URLs as recorded traffic carries them: split without ever failing.

`urllib.parse.urlsplit` raises on a malformed authority (`http://[::1/`, `//h]/`) and drops tabs
and newlines; a recorded URL is data, so it is split by the regular expression of RFC 3986,
appendix B, which matches every string and keeps every character.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult

_RFC3986 = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL)


def split_url(url: str) -> SplitResult:
    """(scheme, netloc, path, query, fragment) of any string; absent parts are empty."""
    scheme, netloc, path, query, fragment = _RFC3986.fullmatch(url).groups()
    return SplitResult(scheme or "", netloc or "", path, query or "", fragment or "")
