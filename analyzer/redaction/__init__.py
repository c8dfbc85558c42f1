"""Credentials out of what is stored (docs/contract.md, Redaction): HTTP headers that carry
them, token query parameters and URL passwords, credential members of frames (also inside
strings that hold JSON), and the same secrets in free text: a server's stderr lines and its
command line. A value is replaced by a stable keyed hash, so the same secret gives the same
replacement and a reader can still tell two tokens apart, without the secret being recoverable
from the file.

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
from urllib.parse import parse_qsl, quote, urlunsplit

from mcptap.wire.urls import split_url

KEY_ENV = "MCPTAP_REDACTION_KEY"

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
    "x-auth-token", "x-access-token", "x-token", "x-secret", "x-client-secret", "x-goog-api-key",
    "anthropic-api-key", "openai-api-key", "x-mcp-key",
})
"""Header names (lower case) whose value is a credential."""

_CREDENTIAL_NAME = re.compile(
    r"(?:^|[-_.])(?:token|access[-_]?token|refresh[-_]?token|id[-_]?token|api[-_]?key|apikey|key|jwt|secret|"
    r"client[-_]?secret|password|passwd|pwd|auth|authorization|bearer|sig|signature|code)$", re.IGNORECASE)
"""Query parameter names (and header names beyond the list above) that carry a credential."""

URL_HEADERS = frozenset({"referer", "location", "content-location"})
"""Header names whose value is a URL: its token query parameters and password are redacted as the
request URL's are (a token in the page a request came from)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9._~+-]*)\s+(\S.*)$")
_BEARER = re.compile(r"bearer\s+\S", re.IGNORECASE)

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

    def credential(self, secret: str, *, scheme: bool = False) -> str:
        """The stand-in of a secret; `scheme`: a value that may begin with an authentication
        scheme, which is kept ("Bearer [redacted:...]")."""
        found = _SCHEME.match(secret) if scheme else None
        if found:
            return f"{found.group(1)} {self.mask(found.group(2))}"
        return self.mask(secret)

    def header_value(self, name: str, value: str) -> str | None:
        """The value to store for a header that carries a credential, or None when it carries
        none: a credential header, a URL header (Referer) holding a token, a `Bearer` token
        under any name."""
        lower = name.lower()
        secret = self._names.get(lower)
        if secret is None:
            secret = self._names[lower] = lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_NAME.search(lower))
        if self.keep:
            return None
        if not secret:
            if lower in URL_HEADERS:
                url, redacted = self.url(value)
                return url if redacted else None
            return self.credential(value, scheme=True) if _BEARER.match(value) else None
        if lower in ("cookie", "set-cookie"):
            return "; ".join(self._cookie(part) for part in value.split(";"))
        return self.credential(value, scheme=lower.endswith("authorization"))

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
        parts = split_url(url)
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
    "authorization", "proxy_authorization", "password", "passwd", "secret", "client_secret", "api_key", "x_api_key",
    "token", "bearer", "access_token", "refresh_token", "id_token", "auth_token", "api_token", "session_token",
    "private_key", "secret_key", "secret_access_key", "cookie", "set_cookie",
} | {name.replace("-", "_") for name in CREDENTIAL_HEADERS})
"""Credential names (docs/contract.md, Redaction), words joined by `_`. A frame member is one
when its name is one of these in any case, its words written together or apart by `_`, `-` or
`.` (`api_key`, `apiKey`, `API-KEY`, `x-api-key`, `accessToken`, `private_key`); the credential
headers are among them. In free text (stderr lines, a command line) a name that ends in one
after a `_`, `-` or `.` is one too (`OPENAI_API_KEY`, `--github-token`, `db.password`)."""

FOLD_AT = 64 << 10
"""A frame up to this many bytes is searched for credential names folded to lower case; a larger
one in any case, as it is (no copy of it)."""

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

    @classmethod
    def from_options(cls, keep: bool, keys, paths) -> "Redaction":
        """What --no-redact, --redact-key and --redact-path ask for; ValueError (saying which
        option) for a JSON path that cannot be read."""
        from mcptap.wire.jsonpath import parse_pattern

        for path in paths or ():
            try:
                parse_pattern(path)
            except ValueError as exc:
                raise ValueError(f"--redact-path: {exc}") from None
        return cls(keep=keep, keys=tuple(keys or ()), paths=tuple(paths or ()))

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


Edit = tuple[int, int, str, str]
"""(start, end, replacement, JSON path of what was replaced) in a text."""


class FrameRedactor:
    """Replaces credential members' values inside frames by their keyed hash (as a JSON string),
    touching no other byte, and says which members it replaced (as JSON paths). A string value
    that holds JSON (a tool result's `content[].text`) is redacted inside and stays a string
    holding JSON: only the escaped bytes of the value replaced change.

    Most frames hold none: a regular expression over the bytes rules them out, so a frame that is
    left alone costs one search. Only a frame that might hold one is scanned token by token
    (frames that are not JSON included: the scan needs no valid JSON).

    `text()` and `command()` redact free text (a server's stderr line, its command line): the
    frame rules, then, in every string of it, credential names given a value (`NAME=VALUE`,
    `NAME: VALUE`, `--NAME VALUE`, `Authorization: Bearer X`), bare `Bearer` tokens and URLs
    with credentials."""

    def __init__(self, redaction: Redaction | None = None, masker: Redactor | None = None):
        from mcptap.wire.jsonpath import Ignore

        self.redaction = redaction or Redaction()
        self.off = self.redaction.keep and not self.redaction.keys and not self.redaction.paths
        self._masker = masker or (Redactor(keep=False) if not self.off else None)
        self._contract = not self.redaction.keep
        self._paths = Ignore(self.redaction.paths)
        names = sorted(CREDENTIAL_KEYS) if self._contract else []
        credential = [_name_regex(n) for n in names]
        globs = [_glob(k) for k in self.redaction.keys]
        exact = self._paths.last_names()
        self._scan_all = exact is None
        alternatives = credential + globs + [re.escape(n) for n in sorted(exact or ())]
        key_regex = "|".join(alternatives) or "(?!)"
        # Which frames might hold one, cheaply: the bytes in lower case must hold a member of such
        # a name (one regular expression search; with the contract's many names, cheaper than a
        # substring search for each name's end first). bytes.lower() folds ASCII only: names are
        # folded the same way, and compared so (re.ASCII). A user's glob is matched in any case
        # on the bytes as they are. A name inside a string that holds JSON is quoted by `\"` (by
        # `\\\"` a level deeper, and its white space may be escaped): the expression takes those.
        self._folded = not globs
        self._candidate = re.compile(rb'"(?:' + (key_regex.encode().lower() if not globs else key_regex.encode())
                                     + rb')\\*"(?:\s|\\+[nrt])*:', re.IGNORECASE if globs else 0)
        # the same search in any case, for a large frame: no folded copy of it (bench/bounds.py:
        # 0.10 s for 128 MiB against 0.27 s folded; on a small frame folding is twice as fast)
        self._any_case = re.compile(self._candidate.pattern, re.IGNORECASE)
        # a name with letters beyond ASCII may hide behind any \u escape; an ASCII one only behind
        # an escape of an ASCII character
        ascii_only = all(a.isascii() for a in alternatives)
        self._escape_gate = _ASCII_ESCAPE if ascii_only else re.compile(rb"\\u[0-9a-fA-F]{4}")
        # a member name written with escapes ("pass\u0077ord", or inside a string "pass\\u0077ord")
        # is looked for only in the rare frame that has a \u escape at all
        escaped = "|".join(_escapable(a) for a in alternatives) or "(?!)"
        self._escaped_key = re.compile(rf'{_ANY_QUOTE}(?:{escaped}){_ANY_QUOTE}{_ANY_SPACE}(?::|\\+u003a)'.encode(),
                                       re.IGNORECASE)
        self._credential = re.compile("|".join(credential) or "(?!)", re.IGNORECASE | re.ASCII)
        self._any_value = bool(self.redaction.paths)  # a user's path may name a whole object
        self._loose = re.compile(
            rf'(?P<q>\\+)?"(?P<key>{key_regex})(?(q)(?P=q))"[ \t\n\r]*:[ \t\n\r]*(?P<value>'
            rf'(?(q)(?P=q)".*?(?<!\\)(?P=q)"|"(?:[^"\\]|\\.)*")|(?(q)(?P=q)".*\Z|"(?:[^"\\]|\\.)*\Z)|[-+0-9.eE]+)',
            re.IGNORECASE | re.ASCII | re.DOTALL)
        self._globs = [re.compile(g, re.IGNORECASE | re.ASCII | re.DOTALL) for g in globs]
        # inside a string that holds JSON only names count: a user's path is of the frame
        self._inner = self if not self.redaction.paths else FrameRedactor(
            Redaction(self.redaction.keep, self.redaction.keys), self._masker)
        self._free = _FreeText(self, names, self.redaction.keys) if not self.off else None

    def might_hold(self, raw: bytes) -> bool:
        """False when `raw` certainly holds nothing to redact (one regular expression search)."""
        if self.off:
            return False
        if self._scan_all:
            return True
        if b"\\u" in raw and self._escape_gate.search(raw) is not None and self._escaped_key.search(raw) is not None:
            return True  # a name written with escapes of plain letters: rare, and looked at closely
        if self._folded and len(raw) <= FOLD_AT:
            return self._valued(self._candidate.finditer(raw.lower()), raw)
        return self._valued(self._any_case.finditer(raw), raw)

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
        return self._apply(raw, False)

    def text(self, raw: bytes) -> tuple[bytes, list[str] | None]:
        """A line of free text (a server's stderr line, one argument of a command line), as
        `frame()` gives it, with the free-text rules applied too (what was replaced: JSON paths
        and the names found in the text)."""
        if self.off or not (self._free.gate(raw) or self.might_hold(raw)):
            return raw, None
        return self._apply(raw, True)

    def text_candidates(self, lines: list[bytes]) -> list[int]:
        """Indexes of the lines `text()` might change."""
        if self.off:
            return []
        if len(lines) > 1 and not (self._free.gate(b"\n".join(lines)) or self.might_hold(b"\n".join(lines))):
            return []
        return [i for i, line in enumerate(lines) if self._free.gate(line) or self.might_hold(line)]

    def command(self, argv: list) -> tuple[list, list[str]]:
        """A command line (a server's argv) with its secrets replaced, and what was replaced:
        `--NAME VALUE` (the next argument), `--NAME=VALUE` and `NAME=VALUE` (an environment
        variable given to `env` or `docker -e`: the rest of the argument), and in any other
        argument what `text()` replaces (`Authorization: Bearer X`, a URL's password or token,
        JSON)."""
        if self.off:
            return argv, []
        return self._free.command(argv)

    def command_text(self, command: str) -> str:
        """The `sessions.command` column (a JSON array of the arguments, else free text) redacted."""
        if self.off or not command:
            return command
        try:
            argv = json.loads(command)
        except ValueError:
            argv = None
        if isinstance(argv, list):
            new, found = self.command(argv)
            return json.dumps(new) if found else command
        new, found = self.text(command.encode("utf-8", "surrogateescape"))
        return new.decode("utf-8", "surrogateescape") if found else command

    def session_fields(self, fields: dict) -> dict:
        """A session row (or the fields of one) with its command line and upstream URL redacted."""
        if self.off:
            return fields
        out = dict(fields)
        if isinstance(out.get("command"), str):
            out["command"] = self.command_text(out["command"])
        if self._contract and isinstance(out.get("upstream"), str):
            out["upstream"] = self._masker.url(out["upstream"])[0]
        return out

    def _apply(self, raw: bytes, free: bool) -> tuple[bytes, list[str] | None]:
        """What the scan replaces in `raw`, whatever the precheck says."""
        text = raw.decode("utf-8", "surrogateescape")
        edits = self._edits(text, free)
        if not edits:
            return raw, None
        out, last, paths = [], 0, []
        for start, end, replacement, path in edits:
            out.append(text[last:start])
            out.append(replacement)
            last = end
            paths.append(path)
        out.append(text[last:])
        return "".join(out).encode("utf-8", "surrogateescape"), paths

    def _edits(self, text: str, free: bool) -> list[Edit]:
        # free text is read as JSON only when it is a document (not one word: "password=x")
        edits = self._spans(text, free) if not free or text.lstrip()[:1] in ("{", "[", '"') else None
        if edits is not None:
            return edits
        edits = self._loose_spans(text)  # not JSON
        if free:
            edits = _merge(edits, self._free.edits(text))
        return edits

    def _key_wanted(self, key: str) -> bool:
        if self._credential.fullmatch(key):
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
        new = self._masker.credential(secret, scheme=key.lower().endswith("authorization"))
        return value_text if new == secret else json.dumps(new)  # unchanged: redacted already

    def _spans(self, text: str, free: bool = False) -> list[Edit] | None:
        """The edits of the values to replace, in order, never nested; None when the text turns
        out not to be JSON. `free`: the free-text rules apply inside every string."""
        spans: list[Edit] = []
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
                        spans.append(self._edit(text, skip_from, pos, skip_path, skip_key))
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
                    spans.append(self._edit(text, m.start(), pos, path, key))
                continue
            if key and (kind == "string" or (kind == "scalar" and tok not in _LITERALS)) and self._key_wanted(key):
                spans.append(self._edit(text, m.start(), pos, path, key))  # a credential is a string or a
                continue  # number, never an object (a JSON Schema's "password" property) or true, false, null
            if kind == "string":
                if '\\"' in tok or "\\u" in tok or (free and self._free.gate_text(tok)):
                    spans += self._inside(tok, m.start(), path, free)
                continue
            if container:
                stack.append([tok == "{", path, 0])
                expect_key = tok == "{"
        return spans if not stack and not skip_depth else None

    def _edit(self, text: str, start: int, end: int, path: tuple, key: str) -> Edit:
        return start, end, self._replacement(text[start:end], key), _format_path(path)

    def _inside(self, tok: str, at: int, path: tuple, free: bool) -> list[Edit]:
        """The edits inside a string value (the JSON string `tok`, at `at` in the text): its text
        is redacted as a frame (and, `free`, as free text), and each replacement is put back
        escaped in place of the escaped bytes it replaces."""
        try:
            inner = json.loads(tok, strict=False)
        except ValueError:
            return []
        if not isinstance(inner, str):
            return []
        r = self._inner
        if not free and not r.might_hold(inner.encode("utf-8", "surrogatepass")):
            return []
        edits = r._edits(inner, free)
        if not edits:
            return []
        offsets = [c.start() for c in _JSON_CHAR.finditer(tok, 1, len(tok) - 1)] + [len(tok) - 1]
        within = _format_path(path) + "|"
        if len(offsets) != len(inner) + 1:  # cannot happen (json.loads reads a character as _JSON_CHAR)
            out, last = [], 0
            for start, end, replacement, _ in edits:
                out += [inner[last:start], replacement]
                last = end
            out.append(inner[last:])
            return [(at, at + len(tok), json.dumps("".join(out)), within + edits[0][3])]
        return [(at + offsets[start], at + offsets[end], json.dumps(replacement)[1:-1], within + p)
                for start, end, replacement, p in edits]

    def _loose_spans(self, text: str) -> list[Edit]:
        """For text that is not JSON (a log line on stdout, a truncated frame): credential
        members written `"name": value` anywhere in it (inside a quoted string too: `\\"name\\":`)."""
        spans = []
        for m in self._loose.finditer(text):
            key = m.group("key")
            if not self._key_wanted(key):
                continue
            value, q = m.group("value"), m.group("q")
            if q is None:
                replacement = self._replacement(value, key)
            else:  # escaped quotes: the value's text is written q" ... q"
                closed = len(value) >= 2 * len(q) + 2 and value.endswith(q + '"')
                secret = value[len(q) + 1:len(value) - len(q) - 1] if closed else value[len(q) + 1:]
                masked = self._masker.credential(_unescaped(secret, q), scheme=key.lower().endswith("authorization"))
                replacement = q + '"' + masked + (q + '"' if closed else "")
                if replacement == value:
                    continue
            spans.append((m.start("value"), m.end("value"), replacement, "$.." + key))
        return spans

    @staticmethod
    def _close(stack: list) -> None:
        if stack:
            stack.pop()


class _FreeText:
    """The free-text rules of a FrameRedactor (see FrameRedactor.text)."""

    def __init__(self, owner: FrameRedactor, names: list[str], keys: tuple[str, ...]):
        self._owner = owner
        self._masker = owner._masker
        contract = owner._contract
        alternatives = []
        if names:
            alternatives.append(r"(?:[A-Za-z0-9]+[-_.])*(?:" + "|".join(_name_regex(n) for n in names) + ")")
        alternatives += [_glob(k, r"[\w.-]") for k in keys]
        name = "|".join(alternatives) or "(?!)"
        rules = [r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+)",
                 r"(?<![\w.-])bearer[ \t]+(?P<token>[A-Za-z0-9._~+/-]{8,}=*)"] if contract else []
        rules.append(rf"(?<![\w.-])(?P<dash>-{{0,2}})(?P<name>{name})(?![\w.-])(?P<q>[\"']?)"
                     r"(?P<sep>[ \t]*[=:][ \t]*|[ \t]+)")
        self._rules = re.compile("|".join(rules), re.IGNORECASE | re.ASCII)
        self._option = re.compile(rf"-{{1,2}}(?P<name>{name})", re.IGNORECASE | re.ASCII)
        self._assign = re.compile(rf"-{{0,2}}(?P<name>{name})=", re.IGNORECASE | re.ASCII)
        words = sorted({n.rsplit("_", 1)[-1] for n in names} | ({"bearer", "://"} if contract else set()))
        self._gate = None if keys else re.compile("|".join(re.escape(w) for w in words).encode() or b"(?!)")
        self._gate_text = None if keys else re.compile("|".join(re.escape(w) for w in words) or "(?!)", re.IGNORECASE)

    def gate(self, raw: bytes) -> bool:
        """False when the free-text rules certainly find nothing in `raw`."""
        return self._gate is None or self._gate.search(raw.lower()) is not None

    def gate_text(self, text: str) -> bool:
        return self._gate_text is None or self._gate_text.search(text) is not None

    def edits(self, text: str) -> list[Edit]:
        out: list[Edit] = []
        pos = 0
        while True:
            m = self._rules.search(text, pos)
            if m is None:
                return out
            edit = self._edit(m, text)
            if edit is not None:
                out.append(edit)
            pos = edit[1] if edit is not None else m.end()

    def _edit(self, m: re.Match, text: str) -> Edit | None:
        if m.group("url") is not None:
            url, redacted = self._masker.url(m.group("url"))
            return (m.start(), m.end(), url, "url") if redacted else None
        if m.group("token") is not None:  # a bare Bearer token
            token = m.group("token")
            masked = self._masker.mask(token)
            return (m.start("token"), m.end("token"), masked, "bearer") if masked != token else None
        name, sep = m.group("name"), m.group("sep")
        if not sep.strip() and not m.group("dash"):
            return None  # two words ("token expired"), not an option and its value
        if name in PROTOCOL_MEMBERS or (m.group("dash") and name[:3].lower() in ("no-", "no_")):
            return None
        v = _TEXT_VALUE.match(text, m.end())
        if v is None:
            return None
        value, scheme = v.group(), name.lower().endswith("authorization")
        quote = v.group("escaped") or (value[0] if value[0] in "\"'" else "")
        if quote:
            delimiter = quote + '"' if v.group("escaped") else quote
            closed = len(value) >= 2 * len(delimiter) and value.endswith(delimiter)
            body = value[len(delimiter):len(value) - len(delimiter)] if closed else value[len(delimiter):]
            if not body:
                return None
            replacement = delimiter + self._masker.credential(body, scheme=scheme) + (delimiter if closed else "")
        elif _TEXT_LITERAL.match(value):
            return None
        elif scheme and _SCHEME_WORD.fullmatch(value) and (t := _NEXT_WORD.match(text, v.end())) is not None:
            token = t.group(1)  # Authorization: Bearer X: the scheme kept
            masked = self._masker.mask(token)
            return (t.start(1), t.end(1), masked, name) if masked != token else None
        else:
            replacement = self._masker.mask(value)
        return (v.start(), v.end(), replacement, name) if replacement != value else None

    def command(self, argv: list) -> tuple[list, list[str]]:
        out, found, hide_next = [], [], False
        for arg in argv:
            if not isinstance(arg, str):
                out.append(arg)
                continue
            if hide_next:
                hide_next = False
                if not arg.startswith("--"):
                    masked = self._masker.mask(arg)
                    if masked != arg:
                        found.append(out[-1])
                    out.append(masked)
                    continue
            m = self._option.fullmatch(arg)
            if m is not None and m.group("name")[:3].lower() not in ("no-", "no_"):
                hide_next = True
                out.append(arg)
                continue
            m = self._assign.match(arg)
            if m is not None and m.end() < len(arg):
                value = arg[m.end():]
                masked = self._masker.credential(value, scheme=m.group("name").lower().endswith("authorization"))
                if masked != value:
                    found.append(m.group("name"))
                out.append(arg[:m.end()] + masked)
                continue
            new, what = self._owner.text(arg.encode("utf-8", "surrogateescape"))
            if what:
                found += what
                arg = new.decode("utf-8", "surrogateescape")
            out.append(arg)
        return out, found


_TEXT_VALUE = re.compile(r"""(?P<escaped>\\+)".*?(?:(?<!\\)(?P=escaped)"|\Z)|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?"""
                         r"""|(?![{\[])[^\s'"&,;\\]+""")
"""A value in free text: quoted (by ", ', or \\" inside a quoted string), else up to a space or
separator; never an object or array (a logged JSON Schema's "password" property)."""
_TEXT_LITERAL = re.compile(r"(?:true|false|null|none)(?![\w.-])", re.IGNORECASE)
"""A literal given as a value (`"secret": true}`, `password=None`): nothing to hide."""
_SCHEME_WORD = re.compile(r"[A-Za-z][A-Za-z0-9._~+-]*")
_NEXT_WORD = re.compile(r"[ \t]+([^\s'\"&,;\\]+)")
_JSON_CHAR = re.compile(r'\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.|[^\\]',
                        re.DOTALL)
"""What json.loads reads as one character of a string: a surrogate pair's two escapes, one escape,
or one character."""
_NO_SECRET = re.compile(rb"[ \t\n\r]*(?:[{\[]|(?:true|false|null)(?=[ \t\n\r,}\]:]|\Z))")
"""What may follow a credential's name and colon where its value is nothing to redact (as the
frame scanner reads it: an object or array, or one of the three literals)."""
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
"""A JSON escape of a printable ASCII character: what a name hidden by escapes must contain."""
_ANY_QUOTE = r'(?:\\*"|\\+u0022)'
_ANY_SPACE = r"(?:[ \t\n\r]|\\+[nrt]|\\+u00(?:20|09|0a|0d))*"
"""A quote and white space as they may be written in a frame, or inside its strings (escaped)."""


def _name_regex(name: str) -> str:
    """A credential name's expression (lower case): its words together or apart by `_`, `-`, `.`."""
    return r"(?:\-|_|\.)?".join(re.escape(word) for word in name.split("_"))


def _merge(first: list[Edit], second: list[Edit]) -> list[Edit]:
    """Edits of both lists in order, an edit that overlaps one kept before it dropped."""
    out: list[Edit] = []
    for edit in sorted(first + second):
        if not out or edit[0] >= out[-1][1]:
            out.append(edit)
    return out


def _unescaped(text: str, q: str) -> str:
    """A value's text written inside `len(q)` levels of quoted strings, as the value's own string
    says it (its text if it cannot be read: the hash then differs, the secret is still gone)."""
    levels = (len(q) + 1).bit_length() - 1
    for _ in range(levels + 1):
        try:
            text = json.loads(f'"{text}"')
        except ValueError:
            break
    return text


def _escapable(regex: str) -> str:
    """A name's expression in which each plain letter, digit or underscore may also be written
    as a JSON \\u escape (behind more backslashes inside a string)."""
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
    return "(?:" + re.escape(c) + "".join(f"|\\\\+u{code}" for code in sorted(codes)) + ")"


def _glob(pattern: str, wildcard: str = '[^"\\\\]') -> str:
    """A member-name glob (`*`, `?`) as a regular expression whose wildcards never cross a quote
    (in free text: take only name characters)."""
    return "".join(wildcard + "*" if c == "*" else wildcard if c == "?" else re.escape(c) for c in pattern)


def _format_path(path: tuple) -> str:
    from mcptap.wire.jsonpath import format_path

    return format_path(path)
