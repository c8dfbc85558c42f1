"""Credentials out of what is stored (spec/contract.md, Redaction): HTTP headers that carry
them and token query parameters. A value is replaced by a stable keyed hash, so the same secret
gives the same replacement and a reader can still tell two tokens apart, without the secret
being recoverable from the file.

The key lives outside the database (a file in the user's config folder, created once with mode
0600, or `MCPTAP_REDACTION_KEY`): a key kept beside the hashes would let anyone holding the file
test guesses of a weak password offline. Where no key file can be kept, a key for this process is
used and the replacement is stable within the run."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

KEY_ENV = "MCPTAP_REDACTION_KEY"

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "x-access-token", "x-token", "x-secret", "x-client-secret", "x-goog-api-key",
    "anthropic-api-key", "openai-api-key",
})
"""Header names (lower case) whose value is a credential."""

_CREDENTIAL_NAME = re.compile(
    r"(?:^|[-_.])(?:token|access[-_]?token|refresh[-_]?token|id[-_]?token|api[-_]?key|apikey|secret|"
    r"client[-_]?secret|password|passwd|auth|sig|signature|code)$", re.IGNORECASE)
"""Query parameter names (and header names beyond the list above) that carry a credential."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9._~+-]*)\s+(\S.*)$")

MASKED = re.compile(r"\[redacted:[0-9a-f]{16}\]")
"""What a redacted value looks like: redacting what was redacted already changes nothing."""


def _key_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcptap" / "redaction.key"


def load_key() -> bytes:
    configured = os.environ.get(KEY_ENV)
    if configured:
        return configured.encode("utf-8")
    path = _key_file()
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(key.hex() + "\n")
    except FileExistsError:  # another recorder made it first
        try:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            pass
    except OSError:
        pass
    return key


class Redactor:
    """Replaces credential values; `keep=True` (`--keep-credentials`) replaces nothing."""

    def __init__(self, key: bytes | None = None, *, keep: bool = False):
        self.keep = keep
        self._names: dict[str, bool] = {}  # header name (lower case) -> carries a credential
        self._key = key if key is not None else (b"" if keep else load_key())

    def mask(self, secret: str) -> str:
        if MASKED.fullmatch(secret):
            return secret
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"[redacted:{digest[:16]}]"

    def header_value(self, name: str, value: str) -> str | None:
        """The value to store for a credential header, or None when the header is no credential."""
        lower = name.lower()
        secret = self._names.get(lower)
        if secret is None:
            secret = self._names[lower] = lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_NAME.search(lower))
        if self.keep or not secret:
            return None
        if lower in ("cookie", "set-cookie"):
            return "; ".join(self._cookie(part) for part in value.split(";"))
        scheme = _SCHEME.match(value)
        if scheme and lower.endswith("authorization"):  # keep the scheme: "Bearer [redacted:...]"
            return f"{scheme.group(1)} {self.mask(scheme.group(2))}"
        return self.mask(value)

    def _cookie(self, part: str) -> str:
        name, eq, value = part.strip().partition("=")
        if not eq:
            return part.strip()
        if "=" in value or name.lower() in ("path", "domain", "expires", "max-age", "samesite"):
            return f"{name}={value}"  # a Set-Cookie attribute, not a secret
        return f"{name}={self.mask(value)}"

    def headers(self, fields: list[tuple[str, str]]) -> tuple[list[list[str]], list[str]]:
        """Headers as stored ([name, value] pairs) and the names that were redacted."""
        out, redacted = [], []
        for name, value in fields:
            masked = self.header_value(name, value)
            if masked is not None:
                redacted.append(name.lower())
                value = masked
            out.append([name, value])
        return out, redacted

    def url(self, url: str) -> tuple[str, list[str]]:
        """The URL with token query parameters and userinfo passwords masked, and what was."""
        if self.keep:
            return url, []
        parts = urlsplit(url)
        redacted: list[str] = []
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, colon, password = userinfo.partition(":")
            if colon:
                netloc = f"{user}:{quote(self.mask(password), safe='[]:')}@{host}"
                redacted.append("userinfo")
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_CREDENTIAL_NAME.search(k) for k, _ in pairs):
                rebuilt = []
                for k, v in pairs:
                    if _CREDENTIAL_NAME.search(k):
                        redacted.append("query:" + k)
                        v = self.mask(v)
                    rebuilt.append(f"{quote(k, safe='')}={quote(v, safe='[]:')}")
                query = "&".join(rebuilt)
        if not redacted:
            return url, []
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), redacted


# -- frame members ----------------------------------------------------------------------------------

CREDENTIAL_KEYS = frozenset({
    "authorization", "password", "passwd", "secret", "client_secret", "api_key", "apikey", "access_token",
    "refresh_token", "id_token",
})
"""Member names (any case) whose value is a credential (spec/contract.md, Redaction)."""

PROTOCOL_MEMBERS = frozenset({
    "jsonrpc", "id", "method", "params", "result", "error", "_meta", "progressToken", "cursor", "nextCursor",
    "requestId", "protocolVersion", "io.modelcontextprotocol/protocolVersion",
})
"""MCP protocol members a user's key pattern never redacts: they carry no secrets and the analysis
needs them (a JSON path given by the user still can)."""

_LITERALS = frozenset({"true", "false", "null"})
_FRAME_TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r]+)
  | (?P<punct>[{}\[\]:,])
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<scalar>[^\s{}\[\]:,"]+)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Redaction:
    """What is taken out of frames: the contract's credential names (unless `keep`), member
    names matching the user's glob patterns (any case), and the user's JSON paths."""

    keep: bool = False
    keys: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    def to_args(self) -> list[str]:
        """Command-line arguments that rebuild this in a recorder process (see from_args)."""
        args = ["--no-redact"] if self.keep else []
        for key in self.keys:
            args += ["--redact-key", key]
        for path in self.paths:
            args += ["--redact-path", path]
        return args

    @classmethod
    def from_args(cls, argv: list[str]) -> "Redaction":
        keep, keys, paths = False, [], []
        it = iter(argv)
        for arg in it:
            if arg == "--no-redact":
                keep = True
            elif arg == "--redact-key":
                keys.append(next(it))
            elif arg == "--redact-path":
                paths.append(next(it))
        return cls(keep, tuple(keys), tuple(paths))


class FrameRedactor:
    """Replaces credential members' values inside frames by their keyed hash (as a JSON string),
    touching no other byte, and says which members it replaced (as JSON paths).

    Most frames hold none: a regular expression over the bytes rules them out, so a frame that is
    left alone costs one search. Only a frame that might hold one is scanned token by token
    (frames that are not JSON included: the scan needs no valid JSON)."""

    def __init__(self, redaction: Redaction | None = None, masker: Redactor | None = None):
        from analyzer.jsonpath import Ignore

        self.redaction = redaction or Redaction()
        self.off = self.redaction.keep and not self.redaction.keys and not self.redaction.paths
        self._masker = masker or (Redactor(keep=False) if not self.off else None)
        self._paths = Ignore(self.redaction.paths)
        names = [] if self.redaction.keep else sorted(CREDENTIAL_KEYS)
        globs = [_glob(k) for k in self.redaction.keys]
        exact = self._paths.last_names()
        self._scan_all = exact is None
        alternatives = [re.escape(n) for n in names] + globs + [re.escape(n) for n in sorted(exact or ())]
        key_regex = "|".join(alternatives) or "(?!)"
        # Which frames might hold one, cheaply: the bytes in lower case must hold the end of a
        # name and a quote (a substring search each), then a member of that name (one regular
        # expression). A user's glob has no fixed end: with globs, the expression alone decides.
        # bytes.lower() folds ASCII only: names are folded the same way
        self._stems = None if globs else sorted({_stem(n) for n in names} | {n.encode().lower() + b'"' for n in exact or ()})
        self._candidate = re.compile(b'"(?:' + (key_regex.encode().lower() if not globs else key_regex.encode())
                                     + rb')"\s*:', re.IGNORECASE if globs else 0)
        # a name with letters beyond ASCII may hide behind any \u escape; an ASCII one only behind
        # an escape of an ASCII character
        ascii_only = all(a.isascii() for a in alternatives)
        self._escape_gate = _ASCII_ESCAPE if ascii_only else re.compile(rb"\\u[0-9a-fA-F]{4}")
        # a member name written with escapes ("pass\u0077ord") is looked for only in the rare
        # frame that has a \u escape at all
        self._escaped_key = re.compile(rf'"(?:{"|".join(_escapable(a) for a in alternatives) or "(?!)"})"\s*:'.encode(),
                                       re.IGNORECASE)
        self._credential = {n.lower() for n in names}
        self._any_value = bool(self.redaction.paths)  # a user's path may name a whole object
        self._loose = re.compile(rf'"(?P<key>{key_regex})"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*"|"(?:[^"\\]|\\.)*\Z|[-+0-9.eE]+)',
                                 re.IGNORECASE)
        self._globs = [re.compile(g, re.IGNORECASE | re.DOTALL) for g in globs]

    def might_hold(self, raw: bytes) -> bool:
        """False when `raw` certainly holds nothing to redact (one regular expression search)."""
        if self.off:
            return False
        if self._scan_all:
            return True
        if b"\\u" in raw and self._escape_gate.search(raw) is not None and self._escaped_key.search(raw) is not None:
            return True  # a name written with escapes of plain letters: rare, and looked at closely
        if self._stems is None:
            return self._valued(self._candidate.finditer(raw), raw)
        low = raw.lower()
        for stem in self._stems:
            if stem in low:
                return self._valued(self._candidate.finditer(low), raw)
        return False

    def _valued(self, members, raw: bytes) -> bool:
        """Whether one of the members found (`"name":` matches, at the same places in `raw`) has
        a value that redaction replaces: a string or a number (or text that is not JSON), never
        an object, an array, true, false or null (a JSON Schema's "password" property): such a
        frame needs no closer look. With a user's JSON path any value may be replaced."""
        if self._any_value:
            return next(members, None) is not None
        return any(_NO_SECRET.match(raw, m.end()) is None for m in members)

    def candidates(self, lines: list[bytes]) -> list[int]:
        """Indexes of the lines that might hold something to redact; one search over all of
        them first, as nearly always none does."""
        if self.off:
            return []
        if self._scan_all:
            return list(range(len(lines)))
        if len(lines) > 1 and not self.might_hold(b"\n".join(lines)):
            return []
        return [i for i, line in enumerate(lines) if self.might_hold(line)]

    def frame(self, raw: bytes) -> tuple[bytes, list[str] | None]:
        """(the bytes to store, the JSON paths of the members replaced, or None: none was)."""
        if not self.might_hold(raw):
            return raw, None
        text = raw.decode("utf-8", "surrogateescape")
        spans = self._spans(text)
        if spans is None:  # not JSON
            spans = self._loose_spans(text)
        if not spans:
            return raw, None
        out, last, paths = [], 0, []
        for start, end, path, key in spans:
            out.append(text[last:start])
            out.append(self._replacement(text[start:end], key))
            last = end
            paths.append(_format_path(path))
        out.append(text[last:])
        return "".join(out).encode("utf-8", "surrogateescape"), paths

    def _key_wanted(self, key: str) -> bool:
        if key.lower() in self._credential:
            return True
        return key not in PROTOCOL_MEMBERS and any(g.fullmatch(key) for g in self._globs)

    def _replacement(self, value_text: str, key: str) -> str:
        if value_text.startswith('"') and (len(value_text) < 2 or not value_text.endswith('"')):
            return json.dumps(self._masker.mask(value_text[1:]))[:-1]  # a string cut off: left unclosed
        if not value_text.startswith('"'):
            return json.dumps(self._masker.mask(value_text))  # a number, literal or container: its text
        try:
            secret = json.loads(value_text)
        except ValueError:  # a string cut off (text that is not JSON), or a bad escape
            secret = value_text[1:-1] if len(value_text) > 1 and value_text.endswith('"') else value_text[1:]
        scheme = _SCHEME.match(secret) if key.lower().endswith("authorization") else None
        if MASKED.fullmatch(scheme.group(2) if scheme else secret):
            return value_text  # redacted already
        if scheme:  # keep the scheme: "Bearer [redacted:...]", as in a header
            return json.dumps(f"{scheme.group(1)} {self._masker.mask(scheme.group(2))}")
        return json.dumps(self._masker.mask(secret))

    def _spans(self, text: str) -> list[tuple[int, int, tuple, str]] | None:
        """(start, end, path, member name) of each value to replace, in order, never nested;
        None when the text turns out not to be JSON."""
        spans: list[tuple[int, int, tuple, str]] = []
        stack: list[list] = []  # per open container: [is_object, path, next index or pending key]
        expect_key = False
        skip_depth = 0  # > 0: inside a value being replaced
        skip_from = 0
        skip_path: tuple = ()
        skip_key = ""
        pending: tuple | None = None  # (path, key) of the member whose value comes next
        tops = 0  # top-level values seen whole
        pos, end = 0, len(text)
        while pos < end:
            m = _FRAME_TOKEN.match(text, pos)
            if m is None:
                return None
            pos = m.end()
            kind = m.lastgroup
            if kind == "ws":
                continue
            tok = m.group()
            if skip_depth:
                if tok in "{[" and kind == "punct":
                    skip_depth += 1
                elif tok in "}]" and kind == "punct":
                    skip_depth -= 1
                    if skip_depth == 0:
                        spans.append((skip_from, pos, skip_path, skip_key))
                        self._close(stack)
                continue
            if not stack and (tops or (kind == "punct" and tok in ":,]}")):
                return None  # a second value, or punctuation, outside any container: not JSON
            if kind == "punct":
                if tok == ":":
                    continue
                if tok == ",":
                    if stack and not stack[-1][0]:
                        stack[-1][2] += 1
                    expect_key = bool(stack) and stack[-1][0]
                    continue
                if tok in "}]":
                    if stack:
                        stack.pop()
                    tops += not stack
                    expect_key = False
                    continue
            if expect_key and kind == "string":
                try:
                    key = json.loads(tok)
                except ValueError:
                    key = tok[1:-1]
                pending = (stack[-1][1] + (key,), key)
                expect_key = False
                continue
            # a value
            if stack and stack[-1][0]:
                if pending is None:
                    return None  # a value where a member name should be (a comma missing): not JSON
                path, key = pending
            elif stack:
                path, key = stack[-1][1] + (stack[-1][2],), ""
            else:
                path, key = (), ""
                tops += tok not in "{["
            pending = None
            container = tok in "{[" and kind == "punct"
            if path and self._paths and self._paths.matches(path):  # a user's path: the whole value
                if container:
                    skip_depth, skip_from, skip_path, skip_key = 1, m.start(), path, key
                    stack.append([tok == "{", path, 0])
                else:
                    spans.append((m.start(), pos, path, key))
                continue
            if key and (kind == "string" or (kind == "scalar" and tok not in _LITERALS)) and self._key_wanted(key):
                spans.append((m.start(), pos, path, key))  # a credential is a string or a number, never
                continue  # an object (a JSON Schema's "password" property) or true, false, null
            if tok in "{[" and kind == "punct":
                stack.append([tok == "{", path, 0])
                expect_key = tok == "{"
        return spans if not stack and not skip_depth else None

    def _loose_spans(self, text: str) -> list[tuple[int, int, tuple, str]]:
        """For text that is not JSON (a log line on stdout, a truncated frame): credential
        members written `"name": value` anywhere in it."""
        spans = []
        for m in self._loose.finditer(text):
            key = m.group("key")
            if self._key_wanted(key):
                spans.append((m.start("value"), m.end("value"), ("..", key), key))
        return spans

    @staticmethod
    def _close(stack: list) -> None:
        if stack:
            stack.pop()


_NO_SECRET = re.compile(rb"[ \t\n\r]*(?:[{\[]|(?:true|false|null)(?=[ \t\n\r,}\]:]|\Z))")
"""What may follow a credential's name and colon where its value is nothing to redact (as the
frame scanner reads it: an object or array, or one of the three literals)."""
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
"""A JSON escape of a printable ASCII character: what a name hidden by escapes must contain."""
_STEMS = (b'password"', b'passwd"', b'secret"', b'token"', b'key"', b'authorization"')


def _stem(name: str) -> bytes:
    """The end of a credential name that a substring search looks for (with its closing quote)."""
    low = name.lower().encode() + b'"'
    return next((stem for stem in _STEMS if low.endswith(stem)), low)


def _escapable(regex: str) -> str:
    """A name's expression in which each plain letter, digit or underscore may also be written
    as a JSON \\u escape."""
    out, i = [], 0
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex):
            out.append(_one(regex[i + 1]) if regex[i + 1] in "_-." else regex[i:i + 2])
            i += 2
            continue
        out.append(_one(c) if c.isalnum() or c == "_" else c)
        i += 1
    return "".join(out)


def _one(c: str) -> str:
    codes = {f"{ord(x):04x}" for x in {c.lower(), c.upper()}}
    return "(?:" + re.escape(c) + "".join(f"|\\\\u{code}" for code in sorted(codes)) + ")"


def _glob(pattern: str) -> str:
    """A member-name glob (`*`, `?`) as a regular expression that never crosses a quote."""
    return "".join('[^"\\\\]*' if c == "*" else '[^"\\\\]' if c == "?" else re.escape(c) for c in pattern)


def _format_path(path: tuple) -> str:
    from analyzer.jsonpath import format_path

    if path[:1] == ("..",):  # found in text that is not JSON
        return "$.." + path[1]
    return format_path(path)
