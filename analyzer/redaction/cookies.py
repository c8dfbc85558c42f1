"""Cookie values out of `Cookie` and `Set-Cookie` headers, by the cookie grammar (RFC 6265 §4.2,
§4.1): a `Cookie` value is `name=value` pairs separated by `;` (a pair without `=` is a value
with no name), a `Set-Cookie` value is one `name=value` and then attributes; a value may itself
hold `=` (base64 padding), and any name may be a cookie's (`path`, `domain`). Each cookie value
is replaced, an attribute is kept; an attribute mcptap does not know (a name with a value, or a
bare word), which no user agent reads as a cookie but which may carry one, is replaced too. Several `Set-Cookie` values folded into one
by commas (as some tools write them) are each read as a `Set-Cookie`."""

from __future__ import annotations

import re
from collections.abc import Callable

ATTRIBUTES = frozenset({"expires", "max-age", "domain", "path", "secure", "httponly", "samesite", "partitioned",
                        "priority", "version", "comment", "commenturl", "discard", "port"})
"""Set-Cookie attributes (RFC 6265 §5.2, RFC 6265bis, the CHIPS and priority drafts, RFC 2965's)."""

_FOLD = re.compile(r",(?=[ \t]*[^;,=\s]+[ \t]*=)")
"""A comma that starts another folded Set-Cookie (`, name=`; an Expires date's comma is followed
by a day number and a space, never by `name=`)."""


def cookie(value: str, mask: Callable[[str], str]) -> str:
    """A `Cookie` header's value with each cookie's value replaced by `mask` (separators kept)."""
    return ";".join(_pair(part, mask) for part in value.split(";"))


def set_cookie(value: str, mask: Callable[[str], str]) -> str:
    """A `Set-Cookie` header's value with its cookie's value replaced, its attributes kept."""
    return ",".join(_one_set_cookie(one, mask) for one in _FOLD.split(value))


def _one_set_cookie(value: str, mask: Callable[[str], str]) -> str:
    first, *attributes = value.split(";")
    out = [_pair(first, mask)]
    for attribute in attributes:
        name = attribute.partition("=")[0].strip().lower()
        out.append(attribute if name in ATTRIBUTES else _pair(attribute, mask))
    return ";".join(out)


def _pair(part: str, mask: Callable[[str], str]) -> str:
    """`name=value` with the value replaced (its white space around kept); a part without `=` is
    a value with no name."""
    name, eq, value = part.partition("=")
    if not eq:
        name, value = "", name
    stripped = value.strip(" \t")
    if not stripped:
        return part
    lead = value[:len(value) - len(value.lstrip(" \t"))]
    trail = value[len(value.rstrip(" \t")):]
    return f"{name}{eq}{lead}{mask(stripped)}{trail}"
