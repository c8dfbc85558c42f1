"""Which kinds of secret a tool call's arguments or its result carry, as the redaction detectors
(analyzer/redaction/) see them: the members capture replaced (the frame's `redacted` paths, kept
with the frame, so a redacted recording still says a secret went out), and what the detectors find
in the frame as stored (credential members, also inside strings holding JSON, `Bearer` tokens and
URLs with credentials in free text). A kind is the name that announced the secret (`apiKey`,
`Authorization`, `url`, `bearer`); the value is never kept."""

from __future__ import annotations

import re

from mcptap.analysis.literal import contains, contains_folded

from mcptap.redaction import FrameRedactor
from mcptap.redaction.frames import CREDENTIAL_KEYS, FOLD_AT
from mcptap.redaction.http import Redactor

_KEY = b"mcptap security reading"
"""A key for the detectors' stand-ins, which are thrown away: only the paths they name are read."""
_DETECTORS: list[FrameRedactor] = []
_BEARER = re.compile(rb"(?i:bearer)[ \t]+[A-Za-z0-9._~+/-]{8,}")
_URL = re.compile(rb"://[^\s\"'<>]*(?:@|[?&][^\s\"'<>]*=)")
"""What the free-text detectors can replace looks like one of these (a Bearer token; a URL with a
password or a query parameter, which the detectors replace when it is a token): only a frame that
has one is given to them, the others to the member detectors alone (whose own search rules most
frames out at once)."""
_STEP = re.compile(r"\.([^.\[\]|]+)$|\[\"?([^\]\"]+)\"?\]$")


def _detector() -> FrameRedactor:
    if not _DETECTORS:
        _DETECTORS.append(FrameRedactor(masker=Redactor(key=_KEY)))
    return _DETECTORS[0]


def _words() -> tuple[bytes, ...]:
    """A word of every credential name (CREDENTIAL_KEYS, lower case): a name is written with its
    words together or apart, never split, so each of its spellings holds each of its words."""
    chosen: list[str] = []
    for name in sorted(CREDENTIAL_KEYS, key=lambda n: (n.count("_"), n)):
        words = name.split("_")
        if not any(w in word for w in chosen for word in words):
            chosen.append(max(reversed(words), key=len))
    return tuple(w.encode() for w in chosen if not any(o != w and o in w for o in chosen))


_WORDS = _words()
_PROGRESS = b"progresstoken"
_PROGRESSES = (_PROGRESS,)
"""`_meta.progressToken`, in most calls: a word of a credential name ("token") that is none (a
credential name is the whole member name, and no name ends in "progress")."""


def named(raw: bytes) -> bool:
    """False when the member detectors certainly find nothing in `raw`: it holds no word of a
    credential name (`_WORDS`, in any case, `progressToken` aside) and no `\\u` escape (behind which a
    name can hide). The detectors' expressions are compiled only once a frame passes."""
    if b"\\u" in raw or len(raw) > FOLD_AT:
        return True
    if not contains_folded(raw, _WORDS):  # no word, so no progressToken either
        return False
    if not contains_folded(raw, _PROGRESSES):
        return True
    low = raw.lower()
    if _PROGRESS in low:
        low = low.replace(_PROGRESS, b"")
    for word in _WORDS:
        if word in low:
            return True
    return False


def kind_of(path: str) -> str:
    """The name a redacted path ends in: `$.params.arguments.apiKey` -> apiKey,
    `$.params.arguments.note|url` -> url."""
    last = path.rsplit("|", 1)[-1]
    found = _STEP.search(last)
    if found is None:
        return last.lstrip("$.") or "secret"
    return found.group(1) or found.group(2)


FREE_TEXT = (b"earer", b"EARER", b"://")
"""What a frame holds where the free-text detectors may find something (a bearer token, a URL)."""


def _free_text(raw: bytes) -> bool:
    """Whether `raw` has what the free-text detectors replace (literal searches first)."""
    if not contains(raw, FREE_TEXT):
        return False
    if (b"earer" in raw or b"EARER" in raw) and _BEARER.search(raw) is not None:
        return True
    return b"://" in raw and _URL.search(raw) is not None


def may_hold(raw: bytes) -> bool:
    """False when `found` certainly finds nothing in `raw` besides what capture recorded."""
    return _free_text(raw) or (named(raw) and _detector().might_hold(raw))


def found(raw: bytes, recorded: list[str] | None, under: str) -> list[tuple[str, str]]:
    """(JSON path, kind) of each secret under the JSON path `under` (`$.params.arguments`,
    `$.result`) of a frame: recorded at capture (`recorded`) or found now in `raw`."""
    paths = list(recorded or ())
    if _free_text(raw):
        paths += _detector().text(raw)[1] or ()
    elif named(raw) and _detector().might_hold(raw):
        paths += _detector().frame(raw)[1] or ()
    out: dict[str, str] = {}
    for path in paths:
        if type(path) is str and (path == under or path.startswith(under + ".") or path.startswith(under + "[")
                                  or path.startswith(under + "|")):
            out.setdefault(path.split("|", 1)[0] if "|" not in path else path, kind_of(path))
    return sorted(out.items())
