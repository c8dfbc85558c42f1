"""The display filter language (Wireshark's display filters are the model; docs/filters.md has the
grammar and examples): parsed once into a small tree that analyzer/store/filtersql.py compiles to
SQL over the store. The HTML viewer's script (analyzer/report/viewer.js) parses the same language;
tests/data/filter_corpus.json holds the cases both must agree on.

A tree is tuples: ("or", a, b), ("and", a, b), ("not", a), ("has", field), ("cmp", field, op,
value) with op one of == != < <= > >= contains ~, and ("in", field, [value, ...]). A field is a
name of FIELDS or, for a JSON member, a tuple of path steps (str members, int indices). A value is
(type, v): ("num", float), ("str", str), ("bool", bool) or ("null", None). A chain of `and` (or
`or`) is a balanced tree of its tests, and a filter nests at most MAX_NESTING parentheses and
negations and holds at most MAX_TESTS tests: its tree is a few hundred levels deep at most, which
the compiler's recursion and SQLite's expression depth (1000) both take. Regular expressions are
RE2's (`regex`), matched in time linear in the text: no pattern backtracks."""

from __future__ import annotations

import re

from mcptap.errors import MCPTapError

NUMBER_FIELDS = {"seq": None, "time": "duration", "latency": "duration", "size": "size", "status": None}
TEXT_FIELDS = ("session", "run", "server", "dir", "kind", "method", "id", "finding", "finding.group", "severity",
               "text")
FIELDS = (*NUMBER_FIELDS, *TEXT_FIELDS)
CHOICES = {"dir": ("c2s", "s2c"),
           "kind": ("request", "notification", "response", "error", "invalid", "batch", "not-json", "unparseable"),
           "severity": ("error", "warning", "info")}
JSON_ROOTS = ("jsonrpc", "params", "result", "error")
"""The first step of a JSON member's path (`params.name`, `result.isError`, `error.code`)."""
UNITS = {"duration": {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0},
         "size": {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3}}
ORDER_OPS = ("<", "<=", ">", ">=")
TEXT_OPS = ("contains", "~")

_NUMBER = re.compile(r"^(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)([A-Za-zµ]*)$")
_PATH = re.compile(r"^(" + "|".join(JSON_ROOTS) + r")((?:\.[A-Za-z_$][\w$-]*|\[\d+\])*)$")
_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]")
_WORD_END = re.compile(r"[\s()\"{},!=<>~&|]")
MAX_NESTING = 100
"""Parentheses and negations one inside another, at most."""
MAX_TESTS = 2000
"""Tests (and values of `in` sets) in one filter, at most."""
_SYMBOLS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "~", "(", ")", "{", "}", ",", "!")


class FilterError(MCPTapError, ValueError):
    """A filter that cannot be parsed: the message and the 1-based column it points at."""

    def __init__(self, message: str, column: int):
        super().__init__(f"bad filter at column {column}: {message}")
        self.message, self.column = message, column


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(type, text, column) of each token: type str (a quoted string, unescaped), op or word."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == '"':
            j, value = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    value.append({"n": "\n", "t": "\t"}.get(text[j + 1], text[j + 1]))
                    j += 2
                else:
                    value.append(text[j])
                    j += 1
            if j >= n:
                raise FilterError("a string is not closed", i + 1)
            out.append(("str", "".join(value), i + 1))
            i = j + 1
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
        if symbol:
            out.append(("op", symbol, i + 1))
            i += len(symbol)
            continue
        if c in "=&|":
            raise FilterError(f"unexpected {c!r} (== compares, && and || join)", i + 1)
        m = _WORD_END.search(text, i)
        j = m.start() if m else n
        out.append(("word", text[i:j], i + 1))
        i = j
    return out


def parse(text: str):
    """The tree of a filter expression; FilterError (with a column) when it is not one."""
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0
        self.nesting = 0
        self.tests = 0

    def deeper(self, col: int) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise FilterError(f"the filter nests deeper than {MAX_NESTING} parentheses and negations", col)

    def counted(self, n: int, col: int) -> None:
        self.tests += n
        if self.tests > MAX_TESTS:
            raise FilterError(f"the filter holds more than {MAX_TESTS} tests", col)

    def parse(self):
        if not self.toks:
            raise FilterError("the filter is empty", 1)
        tree = self.either()
        if self.pos < len(self.toks):
            kind, value, col = self.toks[self.pos]
            raise FilterError(f"unexpected {value!r} (join tests with and, or)", col)
        return tree

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def end_column(self) -> int:
        return len(self.text) + 1

    def take(self, *words) -> bool:
        tok = self.peek()
        if tok and tok[0] in ("op", "word") and tok[1] in words:
            self.pos += 1
            return True
        return False

    def either(self):
        terms = [self.both()]
        while self.take("or", "||"):
            terms.append(self.both())
        return balanced("or", terms)

    def both(self):
        terms = [self.negation()]
        while self.take("and", "&&"):
            terms.append(self.negation())
        return balanced("and", terms)

    def negation(self):
        nested = 0
        while True:
            tok = self.peek()
            if not self.take("not", "!"):
                break
            self.deeper(tok[2])
            nested += 1
        tree = self.primary()
        for _ in range(nested):
            tree = ("not", tree)
        self.nesting -= nested
        return tree

    def primary(self):
        tok = self.peek()
        if tok is None:
            raise FilterError("the filter ends where a test was expected", self.end_column())
        kind, value, col = tok
        if kind == "op" and value == "(":
            self.pos += 1
            self.deeper(col)
            inner = self.either()
            close = self.peek()
            if close is None or close[1] != ")" or close[0] != "op":
                raise FilterError("a parenthesis is not closed", col)
            self.pos += 1
            self.nesting -= 1
            return inner
        if kind != "word":
            raise FilterError(f"expected a field, not {value!r}", col)
        self.pos += 1
        self.counted(1, col)
        field = _field(value, col)
        op = self.peek()
        if op is None or not ((op[0] == "op" and op[1] in ("==", "!=", *ORDER_OPS, "~")) or
                              (op[0] == "word" and op[1] in ("contains", "matches", "in"))):
            return ("has", field)
        self.pos += 1
        name = "~" if op[1] == "matches" else op[1]
        if name == "in":
            return ("in", field, self.choices(field, op[2]))
        return ("cmp", field, name, self.value(field, name, op[2]))

    def choices(self, field, col):
        brace = self.peek()
        if brace is None or brace[:2] != ("op", "{"):
            raise FilterError("in takes a set: in {a, b}", brace[2] if brace else self.end_column())
        self.pos += 1
        values = [self.value(field, "==", col)]
        while self.take(","):
            self.counted(1, col)
            values.append(self.value(field, "==", col))
        close = self.peek()
        if close is None or close[:2] != ("op", "}"):
            raise FilterError("a set is not closed with }", close[2] if close else self.end_column())
        self.pos += 1
        return values

    def value(self, field, op, op_col):
        tok = self.peek()
        if tok is None or tok[0] == "op":
            raise FilterError(f"{op} needs a value", tok[2] if tok else self.end_column())
        self.pos += 1
        return _typed(field, op, tok, op_col)


def balanced(op: str, terms: list):
    """The tests of an `and` (or `or`) chain as a balanced tree of that operator: the same
    selection as the chain, log2(n) levels deep."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return (op, balanced(op, terms[:half]), balanced(op, terms[half:]))


def _field(word: str, col: int):
    if word in FIELDS:
        return word
    m = _PATH.match(word)
    if m:
        steps = [m.group(1)]
        for member, index in _STEP.findall(m.group(2)):
            steps.append(member if member else int(index))
        return tuple(steps)
    raise FilterError(f"unknown field {word!r} (fields: {', '.join(FIELDS)}, or a JSON member such as "
                      "params.name)", col)


def _typed(field, op: str, tok, op_col: int):
    """The value token as a typed value for this field and operator, or FilterError."""
    kind, text, col = tok
    number = _NUMBER.match(text) if kind == "word" else None
    if field in NUMBER_FIELDS:
        if op in TEXT_OPS:
            raise FilterError(f"{field} is a number: use == != < <= > >= in", op_col)
        if number is None:
            raise FilterError(f"{field} needs a number, not {text!r}", col)
        unit, scale = number.group(2).lower(), 1.0
        if unit:
            table = UNITS.get(NUMBER_FIELDS[field]) or {}
            if unit not in table:
                units = ", ".join(table) if table else "none"
                raise FilterError(f"{field} takes no unit {number.group(2)!r} (units: {units})", col)
            scale = table[unit]
        return ("num", float(number.group(1)) * scale)
    if isinstance(field, tuple):  # a JSON member
        if kind == "word" and text in ("true", "false"):
            value = ("bool", text == "true")
        elif kind == "word" and text == "null":
            value = ("null", None)
        elif number is not None and not number.group(2):
            value = ("num", float(number.group(1)))
        else:
            value = ("str", text)
        if op in ORDER_OPS and value[0] != "num":
            raise FilterError(f"{op} compares numbers, not {text!r}", col)
        if op in TEXT_OPS and value[0] != "str":
            raise FilterError(f"{op} takes a string", col)
        return _checked_regex(value, op, col)
    if op in ORDER_OPS:
        raise FilterError(f"{field} is text: use == != contains ~ in", op_col)
    if field == "id" and op == "==" and number is not None and not number.group(2) and kind == "word":
        return ("num", float(number.group(1)))
    if field in CHOICES and op in ("==", "!=") and text not in CHOICES[field]:
        raise FilterError(f"{field} is one of {', '.join(CHOICES[field])}, not {text!r}", col)
    if field == "kind" and text == "not-json":
        text = "unparseable"
    return _checked_regex(("str", text), op, col)


def regex(pattern: str):
    """The compiled regular expression of a `~` test: RE2's syntax (Python's, less backreferences
    and lookaround), matched in time linear in the text; re2.error when it is not one."""
    import re2

    options = re2.Options()
    options.log_errors = False  # its parse errors are ours to report, not RE2's log on stderr
    return re2.compile(pattern, options)


def _checked_regex(value, op: str, col: int):
    if op == "~":
        import re2

        try:
            regex(value[1])
        except re2.error as e:
            message = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
            raise FilterError(f"not a regular expression (RE2 syntax: no backreferences or lookaround): {message}",
                              col) from None
    return value


def id_text(value) -> str:
    """A value compared with `id` as the id's JSON text, as the store keeps it (3 -> "3", "a" -> "\"a\"")."""
    import json

    kind, v = value
    if kind == "num":
        return str(int(v)) if float(v).is_integer() else repr(v)
    return json.dumps(v, ensure_ascii=False)
