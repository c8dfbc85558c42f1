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


def host_name(url: str) -> str:
    """The host of a URL (no userinfo, no port, no brackets), lower-cased; '' when it has none."""
    netloc = split_url(url).netloc.rpartition("@")[2]
    if netloc.startswith("["):
        return netloc[1:].partition("]")[0].lower()
    return netloc.rpartition(":")[0].lower() if netloc.count(":") == 1 else netloc.lower()


def is_loopback(host: str) -> bool:
    """The host names this machine alone: `localhost` (RFC 6761), 127.0.0.0/8, ::1."""
    import ipaddress

    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
