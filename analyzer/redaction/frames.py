"""Credential members out of frames, also inside strings that hold JSON, with the exact bytes
around them kept (`FrameRedactor`)."""

from __future__ import annotations

import json
import re

from mcptap.redaction.http import CREDENTIAL_HEADERS, Redactor
from mcptap.redaction.freetext import PROTOCOL_MEMBERS, Edit, FreeText
from mcptap.redaction.loose import LooseMembers
from mcptap.redaction.names import (ANY_QUOTE, ANY_SPACE, ASCII_ESCAPE, JSON_CHAR, NO_SECRET, escapable, glob,
                                    name_regex, unescaped)
from mcptap.redaction.policy import Redaction

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

_LITERALS = frozenset({"true", "false", "null"})
_FRAME_TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r]+)
  | (?P<punct>[{}\[\]:,])
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<scalar>[^\s{}\[\]:,"]+)
""", re.VERBOSE | re.DOTALL)


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
        credential = [name_regex(n) for n in names]
        globs = [glob(k) for k in self.redaction.keys]
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
        self._escape_gate = ASCII_ESCAPE if ascii_only else re.compile(rb"\\u[0-9a-fA-F]{4}")
        # a member name written with escapes ("pass\u0077ord", or inside a string "pass\\u0077ord")
        # is looked for only in the rare frame that has a \u escape at all
        escaped = "|".join(escapable(a) for a in alternatives) or "(?!)"
        self._escaped_key = re.compile(rf'(?<!\\){ANY_QUOTE}(?:{escaped}){ANY_QUOTE}{ANY_SPACE}(?::|\\+u003a)'.encode(),
                                       re.IGNORECASE)
        self._credential = re.compile("|".join(credential) or "(?!)", re.IGNORECASE | re.ASCII)
        self._any_value = bool(self.redaction.paths)  # a user's path may name a whole object
        self._loose = LooseMembers(key_regex)
        self._globs = [re.compile(g, re.IGNORECASE | re.ASCII | re.DOTALL) for g in globs]
        # inside a string that holds JSON only names count: a user's path is of the frame
        self._inner = self if not self.redaction.paths else FrameRedactor(
            Redaction(self.redaction.keep, self.redaction.keys), self._masker)
        self._free = FreeText(self, names, self.redaction.keys) if not self.off else None

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
        return any(NO_SECRET.match(raw, m.end()) is None for m in members)

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
        offsets = [c.start() for c in JSON_CHAR.finditer(tok, 1, len(tok) - 1)] + [len(tok) - 1]
        within = _format_path(path) + "|"
        if len(offsets) != len(inner) + 1:  # cannot happen (json.loads reads a character as JSON_CHAR)
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
        for key, q, start, end in self._loose.find(text):
            if not self._key_wanted(key):
                continue
            value = text[start:end]
            if q is None:
                replacement = self._replacement(value, key)
            else:  # escaped quotes: the value's text is written q" ... q"
                closed = len(value) >= 2 * len(q) + 2 and value.endswith(q + '"')
                secret = value[len(q) + 1:len(value) - len(q) - 1] if closed else value[len(q) + 1:]
                masked = self._masker.credential(unescaped(secret, q), scheme=key.lower().endswith("authorization"))
                replacement = q + '"' + masked + (q + '"' if closed else "")
                if replacement == value:
                    continue
            spans.append((start, end, replacement, "$.." + key))
        return spans

    @staticmethod
    def _close(stack: list) -> None:
        if stack:
            stack.pop()


def _merge(first: list[Edit], second: list[Edit]) -> list[Edit]:
    """Edits of both lists in order, an edit that overlaps one kept before it dropped."""
    out: list[Edit] = []
    for edit in sorted(first + second):
        if not out or edit[0] >= out[-1][1]:
            out.append(edit)
    return out


def _format_path(path: tuple) -> str:
    from mcptap.wire.jsonpath import format_path

    return format_path(path)
