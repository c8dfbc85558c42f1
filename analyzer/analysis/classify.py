"""Structural classification of JSON-RPC 2.0 messages, before any method knowledge (the seed's
classifier table, refined in docs/findings.md section 1).

A message is reduced to its `Signature`: the shape of each envelope member, by member presence,
never truthiness (`0`, `""` and `null` ids are present). The kind is a pure function of the
signature, looked up in a memo, so a million frames cost a million small tuples and a few
hundred distinct classifications."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from mcptap.wire.jsonwire import NumberText

REQUEST, NOTIFICATION, RESPONSE, ERROR = "request", "notification", "response", "error"
BATCH, INVALID, UNPARSEABLE = "batch", "invalid", "unparseable"
KINDS = (REQUEST, NOTIFICATION, RESPONSE, ERROR, BATCH, INVALID, UNPARSEABLE)

VALID_ID = frozenset({"str", "int", "integral", "fraction", "null"})
"""Id shapes base JSON-RPC accepts: String, Number or Null (Boolean is not a Number here)."""


class Signature(NamedTuple):
    shape: str  # object | array | scalar
    jsonrpc: str = "absent"  # ok (exactly the string "2.0") | absent | bad
    method: str = "absent"  # absent | str | bad
    id: str = "absent"  # absent | str | int | integral (1.0, 1e0) | fraction | null | bool | container
    params: str = "absent"  # absent | object | array | bad
    result: bool = False
    error: str = "absent"  # absent | ok (integer code, string message) | bad


_SCALAR = Signature("scalar")
_ARRAY = Signature("array")

_ID_SHAPE = {str: "str", int: "int", bool: "bool", type(None): "null", dict: "container", list: "container"}
_PARAMS_SHAPE = {dict: "object", list: "array"}


def id_shape(value: Any) -> str:
    shape = _ID_SHAPE.get(type(value))
    if shape is not None:
        return shape
    if type(value) is float:  # from the fast parser: written exactly as repr-shortest (1.5, 1.0)
        return "integral" if value.is_integer() else "fraction"
    if type(value) is NumberText:
        if value.is_integer_literal:
            return "int"
        return "integral" if value.is_integral else "fraction"
    return "container"


def _error_shape(error: Any) -> str:
    if type(error) is not dict:
        return "bad"
    code = error.get("code", None)
    code_ok = type(code) is int or (type(code) is NumberText and code.is_integer_literal)
    return "ok" if code_ok and type(error.get("message", None)) is str else "bad"


def signature(value: Any) -> Signature:
    """The envelope's shape; `value` is one message (a top-level object or a batch element)."""
    return classify(value)[0]


def classify(value: Any) -> tuple[Signature, str]:
    """(signature, kind) of one message: the shape key is a plain tuple, looked up in a memo."""
    if type(value) is not dict:
        return _SHAPES[(_ARRAY if type(value) is list else _SCALAR,)]
    get = value.get
    version = get("jsonrpc", _ABSENT)
    method = get("method", _ABSENT)
    ident = get("id", _ABSENT)
    params = get("params", _ABSENT)
    error = get("error", _ABSENT)
    key = (
        "ok" if version == "2.0" and type(version) is str else ("absent" if version is _ABSENT else "bad"),
        "absent" if method is _ABSENT else ("str" if type(method) is str else "bad"),
        "absent" if ident is _ABSENT else id_shape(ident),
        "absent" if params is _ABSENT else _PARAMS_SHAPE.get(type(params), "bad"),
        "result" in value,
        "absent" if error is _ABSENT else _error_shape(error),
    )
    found = _SHAPES.get(key)
    return found if found is not None else by_key(key)


def by_key(key: tuple) -> tuple[Signature, str]:
    """(signature, kind) of an object message from its shape key: (jsonrpc, method, id, params,
    has result, error), as `classify` computes it (analyzer/_wirescan.c gives the same key)."""
    found = _SHAPES.get(key)
    if found is None:
        sig = Signature("object", *key)
        found = _SHAPES[key] = (sig, kind_of(sig))
    return found


_ABSENT = object()
_SHAPES: dict[tuple, tuple[Signature, str]] = {}  # the few hundred distinct shapes ever seen


def _init_shapes() -> None:
    for sig in (_SCALAR, _ARRAY):
        _SHAPES[(sig,)] = (sig, "invalid")


@lru_cache(maxsize=None)
def kind_of(sig: Signature) -> str:
    """The findings.md kind of a message with this signature."""
    if sig.shape != "object" or sig.jsonrpc != "ok":
        return INVALID
    if sig.method == "str":
        if sig.id == "absent":
            return NOTIFICATION
        if sig.id in VALID_ID and sig.params != "bad":
            return REQUEST
        return INVALID
    if sig.method != "absent" or sig.id not in VALID_ID:
        return INVALID
    if sig.result and sig.error == "absent":
        return RESPONSE
    if sig.error == "ok" and not sig.result:
        return ERROR
    return INVALID


_init_shapes()
