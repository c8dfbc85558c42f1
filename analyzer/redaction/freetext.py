"""Secrets in free text: a server's stderr lines and its command line (`FreeText`), found by
the names that announce them."""

from __future__ import annotations

import re
from typing import Any

from mcptap.redaction.names import glob, name_regex

PROTOCOL_MEMBERS = frozenset({
    "jsonrpc", "id", "method", "params", "result", "error", "_meta", "progressToken", "cursor", "nextCursor",
    "requestId", "protocolVersion", "io.modelcontextprotocol/protocolVersion",
})
"""MCP protocol members a user's key pattern never redacts: they carry no secrets and the analysis
needs them (a JSON path given by the user still can)."""


Edit = tuple[int, int, str, str]
"""(start, end, replacement, JSON path of what was replaced) in a text."""


class FreeText:
    """The free-text rules of a FrameRedactor (see FrameRedactor.text)."""

    def __init__(self, owner: Any, names: list[str], keys: tuple[str, ...]):  # owner: its FrameRedactor
        self._owner = owner
        self._masker = owner._masker
        contract = owner._contract
        alternatives = []
        if names:
            alternatives.append(r"(?:[A-Za-z0-9]+[-_.])*(?:" + "|".join(name_regex(n) for n in names) + ")")
        alternatives += [glob(k, r"[\w.-]") for k in keys]
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
