"""Credentials out of the bodies of HTTP exchanges that are not MCP (OAuth 2.1 and RFC 7591: a
token request's form, a token answer's JSON, a registration's client secret, an authorization
answer's `form_post` page): each value of a credential member, form field or form input (`code`,
`code_verifier`, `client_secret`, `registration_access_token`, `access_token`, `refresh_token`,
`id_token`, `id_token_hint`, assertions, ...) replaced by its keyed hash (`Redactor.mask`: the
same secret gives the same stand-in everywhere, so a code is still seen going from the redirect to
the token request). Only those values change: every other byte of the body stays as it crossed.

The part of a body that is stored (its first BODY_LIMIT bytes) is read by its content type and by
its shape, whatever its size, byte order mark or charset: JSON members are found by a scan of the
text's tokens that needs no valid JSON (a document cut short, duplicate names, a BOM), form fields
by the form grammar, form inputs by their tag, and a body whose type says one thing and whose
text another is read both ways."""

from __future__ import annotations

import codecs
import html
import json
import re
from urllib.parse import quote, unquote_plus

from mcptap.redaction.http import CREDENTIAL_NAME, Redactor
from mcptap.redaction.keys import MASKED

BODY_LIMIT = 1 << 16
"""Bytes of a non-MCP body that are stored (a discovery document, a token answer: a few hundred)."""

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
"""Byte order marks of the encodings that are not UTF-8 (a UTF-8 one is kept as its character)."""
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([A-Za-z0-9._:-]+)", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?P<close>"|\\?\Z)|[{}\[\]:,]|[^\s{}\[\]:,"]+|\s+', re.DOTALL)
"""A JSON token, leniently: a string (closed, or running to the end of a body cut short), a
punctuation mark, a scalar or anything else up to one, white space."""
_FIELD = re.compile(r"(?:^|(?<=&))(?P<name>[^&=]*)=(?P<value>[^&]*)")
_LINE_FIELD = re.compile(r"(?:^|(?<=[&\r\n]))(?P<name>[^&=\r\n]*)=(?P<value>[^&\r\n]*)")
"""A form field, from the start of the body or of a field only (one try a field: linear); in
plain text a line is a field too."""
_INPUT = re.compile(r"""<(?:input|button|param|meta)\b(?:[^>"']|"[^"]*(?:"|\Z)|'[^']*(?:'|\Z))*(?:>|\Z)""",
                    re.IGNORECASE)
"""A tag that carries a named value (a form input), to its end (quoted values may hold `>`), or to
the end of a page cut short."""
_TAG_NAME = re.compile(r"<\w+")
_ATTRIBUTE = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*("[^"]*"?|'[^']*'?|[^\s>]+))?""")


def secret_name(name: str) -> bool:
    """Whether a member, field or input of this name holds a credential (the names of
    CREDENTIAL_NAME, in any case, written apart by `_`, `-`, `.` or together in camel case)."""
    name = name.strip().lstrip("\ufeff")
    return bool(CREDENTIAL_NAME.search(name) or CREDENTIAL_NAME.search(_CAMEL.sub("_", name)))


def redact_body(redactor: Redactor, content_type: str | None, body: bytes | str | None) -> tuple[str | None, list[str]]:
    """The body as stored (text, its first BODY_LIMIT bytes; text given is taken as stored
    already) and the names of what was redacted in it (`body:NAME`)."""
    if not body:
        return None, []
    text = body if isinstance(body, str) else _text(body[:BODY_LIMIT], content_type)
    if redactor.keep:
        return text, []
    edits = body_edits(redactor, content_type, text)
    if not edits:
        return text, []
    out, last = [], 0
    for start, end, replacement, _ in edits:
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out), list(dict.fromkeys("body:" + name for *_, name in edits))


def body_edits(redactor: Redactor, content_type: str | None, text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, replacement, name) of each credential value in a body's text, in order."""
    media = (content_type or "").split(";")[0].strip().lower()
    shape = text.lstrip("\ufeff \t\r\n")[:1]
    edits = _members(redactor, text)  # JSON members: wherever `"name": "value"` is written
    if media in ("text/html", "application/xhtml+xml") or media.endswith("xml") or shape == "<":
        edits += _inputs(redactor, text)
    if media == "application/x-www-form-urlencoded":
        edits += _fields(redactor, text, _FIELD)
    elif not (media.endswith(("/json", "+json")) or shape in ("{", "[", "<", "")):
        edits += _fields(redactor, text, _LINE_FIELD)  # plain text: `name=value` pairs, by & or lines
    edits.sort()
    kept: list = []
    for edit in edits:
        if not kept or edit[0] >= kept[-1][1]:
            kept.append(edit)
    return kept


def _text(raw: bytes, content_type: str | None) -> str:
    """A body's bytes as text: by its byte order mark, else its charset, else UTF-8 (any other
    byte kept as a lone surrogate)."""
    codec = next((codec for bom, codec in _BOMS if raw.startswith(bom)), None)
    m = _CHARSET.search(content_type or "") if codec is None else None
    if m is not None:
        try:
            codec = codecs.lookup(m.group(1)).name
        except LookupError:
            codec = None
    if codec is not None and codec not in ("utf-8", "ascii"):
        try:
            return raw.decode(codec, "replace")
        except (LookupError, TypeError, ValueError):
            pass
    return raw.decode("utf-8", "surrogateescape")


def _masked(redactor: Redactor, secret: str) -> str | None:
    """The stand-in of a secret, or None: nothing to replace (empty, or a stand-in already)."""
    if not secret or MASKED.fullmatch(secret):
        return None
    return redactor.mask(secret)


def _string(tok: str, closed: bool) -> str:
    """A JSON string token's text (one cut short: what it says so far)."""
    try:
        return json.loads(tok if closed else tok.removesuffix("\\") + '"')
    except ValueError:
        return tok[1:-1] if closed else tok[1:]


def _members(redactor: Redactor, text: str) -> list:
    """Each string value of a member whose name is a credential's, every time it is written."""
    edits, key, colon = [], None, False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        first = tok[0]
        if first.isspace():
            continue
        if first == '"':
            closed = m.group("close") == '"'
            if colon:
                if secret_name(key):
                    masked = _masked(redactor, _string(tok, closed))
                    if masked is not None:
                        written = json.dumps(masked)
                        edits.append((m.start(), m.end(), written if closed else written[:-1], key))
                key, colon = None, False
            else:
                key = _string(tok, closed)
            continue
        colon = first == ":" and key is not None
        if not colon:
            key = None
    return edits


def _fields(redactor: Redactor, text: str, grammar: re.Pattern) -> list:
    """Each value of a form field (`name=value`, percent-encoded) whose name is a credential's (in
    plain text, its last word: `the token=...`)."""
    edits = []
    for m in grammar.finditer(text):
        words = unquote_plus(m.group("name")).split()
        name = words[-1] if words and grammar is _LINE_FIELD else unquote_plus(m.group("name"))
        if not secret_name(name):
            continue
        masked = _masked(redactor, unquote_plus(m.group("value")))
        if masked is not None:
            edits.append((m.start("value"), m.end("value"), quote(masked, safe="[]:"), name.strip().lstrip("\ufeff")))
    return edits


def _inputs(redactor: Redactor, text: str) -> list:
    """Each value of a page's form input (`<input type="hidden" name="code" value="...">`: an
    OAuth `form_post` answer; a `<meta name=... content=...>`) whose name is a credential's, every
    value attribute it has."""
    edits = []
    for tag in _INPUT.finditer(text):
        written = tag.group()
        names, values = [], []
        for a in _ATTRIBUTE.finditer(written, _TAG_NAME.match(written).end()):
            if a.group(2) is None:
                continue
            attribute = a.group(1).lower()
            if attribute == "name":
                names.append(html.unescape(a.group(2).strip("\"'")))
            elif attribute in ("value", "content"):
                values.append(a)
        name = next((n for n in names if secret_name(n)), None)
        if name is None:
            continue
        for a in values:
            value = a.group(2)
            mark = value[0] if value[0] in "\"'" else ""
            inner = value[len(mark):]
            inner = inner[:-1] if mark and inner.endswith(mark) else inner
            masked = _masked(redactor, html.unescape(inner))
            if masked is not None:
                start = tag.start() + a.start(2) + len(mark)
                edits.append((start, start + len(inner), masked, name))
    return edits
