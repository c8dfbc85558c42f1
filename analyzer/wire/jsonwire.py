"""JSON as the wire said it (RFC 8259; docs/mcp-reference.md sections 2.5 and 2.6): a parse that
keeps what ordinary parsers erase, and never raises on bad input.

- Duplicate member names are reported (the value kept is the last, as most parsers do).
- Numbers written with a fraction or exponent (`1.0`, `1e0`, `1.5`) stay `NumberText`, not
  float: `1`, `1.0` and `1e0` remain distinguishable, and nothing is rounded. Integers stay
  int, however big.
- Fast path: orjson parses the frame, and writing the value back must give the frame's exact
  bytes. When it does, the frame has no duplicate names and every number is written the way
  orjson writes a float or an int, so plain floats carry no ambiguity (their text is
  `to_json(value)`). When it does not (whitespace, escapes, number forms, duplicates, integers
  beyond 64 bits), the exact slow path above decides.
- Bytes that are not UTF-8 and text that is not JSON are results (`Parsed.error`), not
  exceptions. Any depth is parsed: orjson reads up to 1024 levels but writes only 254, so a
  value it cannot write back takes the exact path, and nesting past the json module's
  recursion takes an iterative fallback. `to_json` writes any depth back the same way.
- Any number is kept: a literal too large for a float (`1e400`, 400 digits) is an int or a
  NumberText, compared exactly (`NumberText.exact`), never an overflow."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

MAX_INT_DIGITS = 4300  # CPython's default limit on int(str); longer literals stay NumberText


class NumberText:
    """A JSON number kept as written, for literals with a fraction or exponent (and integers
    too long for int()). Equal to another NumberText with the same text, never to an int."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    @property
    def is_integer_literal(self) -> bool:
        """Written as an integer (no fraction, no exponent): only integers too long for int()."""
        return not any(c in self.text for c in ".eE")

    @property
    def is_integral(self) -> bool:
        """True for `1.0`, `1e0`, `-2.00E+1`, `1e400`: no fractional part, written as if it had
        one (decided exactly, whatever the size: no float is involved)."""
        value = _decimal(self.text)
        if value is None:  # an exponent past what a Decimal holds: its sign decides
            return _huge_exponent_positive(self.text) or not _has_nonzero_digit(self.text)
        return value == value.to_integral_value()

    @property
    def exact(self) -> Decimal:
        """The number's exact value (a Decimal holds any JSON number: `1e400`, 10,000 digits);
        an exponent past a Decimal's (beyond 10**18) gives +-Infinity or 0 by its sign."""
        value = _decimal(self.text)
        if value is not None:
            return value
        negative = self.text.startswith("-")
        if _huge_exponent_positive(self.text) and _has_nonzero_digit(self.text):
            return Decimal("-Infinity" if negative else "Infinity")
        return Decimal("-0" if negative else "0")

    def integral_text(self) -> str:
        """An integral number's digits (`1e3` -> `1000`); its own text when that would run past
        MAX_INT_DIGITS digits (`1e999999` stays as written)."""
        value = _decimal(self.text)
        return str(int(value)) if value is not None and value.adjusted() < MAX_INT_DIGITS else self.text

    def __eq__(self, other: object) -> bool:
        return type(other) is NumberText and other.text == self.text

    def __hash__(self) -> int:
        return hash(("NumberText", self.text))

    def __repr__(self) -> str:
        return f"NumberText({self.text!r})"


def _decimal(text: str) -> Decimal | None:
    """The Decimal of a JSON number's text, None when its exponent is past a Decimal's."""
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _mantissa_exponent(text: str) -> tuple[str, str]:
    lower = text.lower()
    mantissa, _, exponent = lower.partition("e")
    return mantissa, exponent


def _huge_exponent_positive(text: str) -> bool:
    return not _mantissa_exponent(text)[1].startswith("-")


def _has_nonzero_digit(text: str) -> bool:
    return any(c in "123456789" for c in _mantissa_exponent(text)[0])


@dataclass(slots=True)
class Parsed:
    """What one frame turned out to be. `error` is None when `value` holds the JSON value."""

    value: Any = None
    error: str | None = None
    duplicate_keys: list[str] | tuple[str, ...] = ()
    plain: bool = False
    """`value` is orjson's reading of the bytes (which orjson writes back the same): what
    `orjson.loads` of them gives, so a later reader need not parse them again."""


class _Scanner:
    """One decoder with the hooks, reused for every frame (not thread-safe: one per thread)."""

    def __init__(self) -> None:
        self.duplicates: list[str] = []
        dups = self.duplicates

        def object_pairs(pairs: list[tuple[str, Any]]) -> dict:
            obj = dict(pairs)
            if len(obj) != len(pairs):
                seen: set[str] = set()
                for key, _ in pairs:
                    if key in seen:
                        dups.append(key)
                    seen.add(key)
            return obj

        self.object_pairs = object_pairs
        self.decoder = json.JSONDecoder(object_pairs_hook=object_pairs, parse_float=NumberText,
                                        parse_constant=_not_json)
        self.long_decoder = json.JSONDecoder(object_pairs_hook=object_pairs, parse_float=NumberText,
                                             parse_int=_int_or_text, parse_constant=_not_json)

    def parse_text(self, text: str) -> Parsed:
        dups = self.duplicates
        dups.clear()
        try:
            value = self.decoder.decode(text)
        except json.JSONDecodeError as exc:
            return Parsed(error=f"not JSON: {exc.msg} at character {exc.pos}")
        except ValueError:  # an integer literal too long for int(): keep it as text
            dups.clear()
            try:
                value = self.long_decoder.decode(text)
            except RecursionError:
                return self._deep(text)
            except ValueError as exc:
                return Parsed(error=f"not JSON: {exc}")
        except RecursionError:
            return self._deep(text)
        return Parsed(value, None, list(dups) if dups else [])

    def _deep(self, text: str) -> Parsed:
        self.duplicates.clear()
        try:
            value = _parse_iteratively(text, self.object_pairs)
        except ValueError as exc:
            return Parsed(error=f"not JSON: {exc}")
        return Parsed(value, None, list(self.duplicates))


def _not_json(name: str):
    raise ValueError(f"{name} is not a JSON value (RFC 8259 has no NaN or Infinity)")


def _int_or_text(text: str) -> int | NumberText:
    digits = len(text) - (text[0] == "-")
    return int(text) if digits <= MAX_INT_DIGITS else NumberText(text)


_scanner = _Scanner()


_NO_DUPLICATES: tuple[str, ...] = ()
_loads, _dumps, _JSONDecodeError = orjson.loads, orjson.dumps, orjson.JSONDecodeError


def parse(raw: str | bytes) -> Parsed:
    """Parse one frame. Bytes must be UTF-8 (MCP: "JSON-RPC messages MUST be UTF-8 encoded")."""
    try:
        value = _loads(raw)
    except _JSONDecodeError:
        value = _NOT_FAST
    if value is not _NOT_FAST:
        try:
            written = _dumps(value)
        except TypeError:  # nested deeper than orjson writes (it reads deeper than it writes)
            return _parse_exactly(raw)
        if written == raw or (type(raw) is str and written == raw.encode("utf-8", "surrogatepass")):
            return Parsed(value, None, _NO_DUPLICATES, True)
    return _parse_exactly(raw)


_NOT_FAST = object()


def _parse_exactly(raw: str | bytes) -> Parsed:
    if type(raw) is not str:
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            return Parsed(error=f"not UTF-8: invalid byte 0x{exc.object[exc.start]:02x} at byte {exc.start}")
    return _scanner.parse_text(raw)


# -- the iterative fallback, for nesting deeper than the C scanner's recursion limit -----------

TOKEN = _TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r]+)
  | (?P<punct>[{}\[\]:,])
  | (?P<string>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")
  | (?P<number>-?(?:0|[1-9][0-9]*)(?P<frac>\.[0-9]+)?(?P<exp>[eE][-+]?[0-9]+)?)
  | (?P<literal>true|false|null)
""", re.VERBOSE)

_LITERALS = {"true": True, "false": False, "null": None}


def _parse_iteratively(text: str, object_pairs) -> Any:
    """A strict JSON parser with an explicit stack (no recursion), giving the scanner's values."""
    stack: list[list] = []  # [items or (key, value) pairs, is_object, the member name pending]
    state = "value"  # value | value_or_close | key | key_or_close | colon | comma_or_close | done
    result: Any = None
    pos, end = 0, len(text)
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            if pos >= end and state == "done":
                return result
            raise ValueError(f"unexpected character at {pos}" if pos < end else "unexpected end of text")
        pos = m.end()
        if m.group("ws"):
            continue
        tok, at = m.group(), m.start()
        if state == "done":
            raise ValueError(f"extra data at {at}")
        closing = tok in "]}" and m.group("punct") is not None
        if closing and state in ("value_or_close", "key_or_close", "comma_or_close"):
            items, is_object, _ = stack[-1]
            if (tok == "}") != is_object:
                raise ValueError(f"mismatched {tok!r} at {at}")
            stack.pop()
            value = object_pairs(items) if is_object else items
        elif state in ("key", "key_or_close"):
            if m.group("string") is None:
                raise ValueError(f"expected a member name at {at}")
            stack[-1][2], state = json.loads(tok), "colon"
            continue
        elif state == "colon":
            if tok != ":":
                raise ValueError(f"expected ':' at {at}")
            state = "value"
            continue
        elif state == "comma_or_close":
            if tok != ",":
                raise ValueError(f"expected ',' or a closing bracket at {at}")
            state = "key" if stack[-1][1] else "value"
            continue
        elif tok == "{":
            stack.append([[], True, None])
            state = "key_or_close"
            continue
        elif tok == "[":
            stack.append([[], False, None])
            state = "value_or_close"
            continue
        elif m.group("string") is not None:
            value = json.loads(tok)
        elif m.group("number") is not None:
            value = NumberText(tok) if (m.group("frac") or m.group("exp")) else _int_or_text(tok)
        elif m.group("literal") is not None:
            value = _LITERALS[tok]
        else:
            raise ValueError(f"expected a value at {at}")
        if not stack:
            result, state = value, "done"
        elif stack[-1][1]:
            stack[-1][0].append((stack[-1][2], value))
            state = "comma_or_close"
        else:
            stack[-1][0].append(value)
            state = "comma_or_close"


def to_json(value: Any, *, sort_keys: bool = False) -> str:
    """JSON text of a parsed value, numbers as they were written, at any depth (a value nested
    past the interpreter's stack is written by `_to_json_deep`, without recursion);
    `sort_keys`: members in name order (a canonical form, for matching)."""
    if sort_keys:
        return _to_json_deep(value, sort_keys=True)
    try:
        return _to_json(value)
    except RecursionError:
        return _to_json_deep(value)


def _scalar_json(value: Any) -> str:
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str or kind is float:
        try:
            return _dumps(value).decode()
        except TypeError:  # a lone surrogate (legal in a JSON escape, not in UTF-8)
            return json.dumps(value)
    if kind is NumberText:
        return value.text
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(repr(value))


def _to_json(value: Any) -> str:
    if type(value) is list:
        return "[" + ",".join(map(_to_json, value)) + "]"
    if type(value) is dict:
        return "{" + ",".join(f"{json.dumps(k)}:{_to_json(v)}" for k, v in value.items()) + "}"
    return _scalar_json(value)


def _to_json_deep(value: Any, sort_keys: bool = False) -> str:
    """`_to_json` with an explicit stack: the same text for a value of any depth."""
    out: list[str] = []
    stack: list[list] = []  # [the container's items, its closing bracket, whether one was written]
    item = value
    while True:
        if type(item) is list:
            out.append("[")
            stack.append([iter(item), "]", False])
        elif type(item) is dict:
            out.append("{")
            stack.append([iter(sorted(item.items()) if sort_keys else item.items()), "}", False])
        else:
            out.append(_scalar_json(item))
        while stack:
            top = stack[-1]
            item = next(top[0], _END)
            if item is not _END:
                break
            out.append(top[1])
            stack.pop()
        else:
            return "".join(out)
        if top[2]:
            out.append(",")
        top[2] = True
        if top[1] == "}":
            key, item = item
            out.append(json.dumps(key) + ":")


_END = object()
