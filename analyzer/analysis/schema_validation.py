"""Every message checked against its revision's schema: the wire models of `mcp-types` (pydantic,
generated from the specification's schema for 2025-11-25 and 2026-07-28; the revisions before
2025-11-25 are checked against the 2025-11-25 models, as mcp-types maps them: docs/findings.md says
what that does and does not check). A request's or notification's `params` and a result are
judged once per message by a check compiled once per (revision, direction, kind, method): the
JSON Schema pydantic gives of the model, compiled by jsonschema-rs (the `[schema]` extra) over the
frame parsed by orjson, says whether it passes; one that does not, or any message without
jsonschema-rs, is validated by the model itself (pydantic's JSON validator, strict: no coercion),
whose errors become `schema-violation` findings (analyzer/analysis/rules/schema_checks.py): one per
message and JSON path, in the schema's words.

The same pass gives what the result semantics need (analyzer/analysis/results.py): the tool a
tools/call named, the `outputSchema` each tool of a tools/list result declared, and a tools/call
result's `structuredContent` and `isError`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from mcptap.analysis import mcp
from mcptap.analysis.classify import NOTIFICATION, REQUEST, RESPONSE
from mcptap.wire import jsonwire
from mcptap.wire.jsonpath import format_path

try:  # the [schema] extra: the quick verdict on conformant messages
    import jsonschema_rs
except ImportError:  # pragma: no cover - an install without it
    jsonschema_rs = None

C2S, S2C = mcp.C2S, mcp.S2C
MAX_PATHS = 8
"""Findings one message gives at most (the rest are counted in the last)."""

_TABLES = {(REQUEST, C2S): "CLIENT_REQUESTS", (REQUEST, S2C): "SERVER_REQUESTS",
           (NOTIFICATION, C2S): "CLIENT_NOTIFICATIONS", (NOTIFICATION, S2C): "SERVER_NOTIFICATIONS",
           (RESPONSE, S2C): "SERVER_RESULTS", (RESPONSE, C2S): "CLIENT_RESULTS"}
"""Where each message's type is in `mcp_types.methods`: a response by its request's method (a
result the server sends answers a client request)."""
INTERIM = "InputRequiredResult"
_CACHE_FORMAT = 1  # bump when _schemas writes something else


def era(revision: str) -> str:
    """The schema a revision's messages are checked against (the mcp-types models that cover it)."""
    return "2026-07-28" if revision == "2026-07-28" else "2025-11-25"


@dataclass(frozen=True, slots=True)
class Checker:
    """One check: the frame's bytes in; out, the member judged (params or result), as parsed
    (None where orjson cannot read it), or the ValidationError. The quick verdict is the
    jsonschema-rs validator of the model's JSON Schema; the model itself (`adapter`, built on
    first use) judges what that refuses, and every message without jsonschema-rs."""

    key: tuple  # (revision, kind, direction, method): whose model this checks
    member: str  # "params" or "result"
    schema: str  # the schema's name for the type, e.g. CallToolRequest
    quick: Any  # the jsonschema-rs validator of the same model, or None
    interim: "Checker | None" = None
    """2026-07-28: the check of a result whose resultType is "input_required" (InputRequiredResult)."""
    arm: bool = False  # this is the interim check of a result

    @property
    def adapter(self):
        """The pydantic TypeAdapter of the model (mcp-types and pydantic are loaded here)."""
        return _adapter(self.key, self.arm)

    def validate(self, raw: str | bytes, frame: Any = None) -> Any:
        """Raises Failed (this check, or the interim one, and pydantic's error). `frame`: `raw`
        as orjson reads it, when the caller has it (None: parsed here)."""
        if frame is None:
            try:
                frame = orjson.loads(raw)
            except orjson.JSONDecodeError:  # a number past 64 bits: orjson's limit, not the schema's
                frame = None
        if self.interim is not None and type(frame) is dict and type(frame.get("result")) is dict \
                and frame["result"].get("resultType") == "input_required":
            return self.interim.validate(raw, frame)
        if frame is None or self.quick is None or not self.quick.is_valid(frame):
            from pydantic import ValidationError

            try:
                self.adapter.validate_json(raw, strict=True)
            except ValidationError as error:
                raise Failed(self, error) from None
        return frame.get(self.member) if type(frame) is dict else None


class Failed(Exception):
    """A message its schema refuses: the check that did, and pydantic's error."""

    def __init__(self, check: Checker, error):
        super().__init__(check.schema)
        self.check, self.error = check, error


@cache
def checker(revision: str, kind: str, direction: str, method: str) -> Checker | None:
    """The check of a message of this kind and method, or None where the revision defines none
    (an unknown method, a method of the other direction: other rules say so). With jsonschema-rs
    it comes from the schemas kept per installed mcp-types (`_schemas`): no model is loaded until
    a message fails its quick check."""
    key = (revision, kind, direction, method)
    if jsonschema_rs is not None:
        found = _schemas()["checks"].get("|".join(key))
        return None if found is None else _quick(found, key)
    target = _target(*key)
    if target is None:
        return None
    built = _built(target, kind == RESPONSE)
    interim = None if built.interim is None else Checker(key, built.interim.member, built.interim.name, None, arm=True)
    return Checker(key, built.member, built.name, None, interim)


def _quick(index: int, key: tuple, arm: bool = False) -> Checker:
    entry = _schemas()["schemas"][index]
    interim = None if entry["interim"] is None else _quick(entry["interim"], key, True)
    return Checker(key, entry["member"], entry["name"], _validator(index), interim, arm)


@cache
def _validator(index: int) -> Any:
    """The jsonschema-rs validator of one schema (compiled once per process, on first use)."""
    return jsonschema_rs.validator_for(_schemas()["schemas"][index]["schema"], offline=True)


@cache
def _target(revision: str, kind: str, direction: str, method: str) -> Any:
    name = _TABLES.get((kind, direction))
    if name is None:
        return None
    from mcp_types import methods as wire

    return getattr(wire, name).get((method, revision))


def _adapter(key: tuple, arm: bool) -> Any:
    built = _built(_target(*key), key[1] == RESPONSE)
    return (built.interim if arm else built).adapter


@dataclass(frozen=True)
class _Model:
    """A check built from the model: its TypeAdapter, the member it judges, its name."""

    adapter: Any
    member: str
    name: str
    interim: "_Model | None" = None


@cache
def _built(target: Any, result: bool) -> _Model:
    """The check of one type (revisions that share a schema share it)."""
    if result:  # a 2026-07-28 result that may be interim is judged by its resultType, not as either arm
        arms = getattr(target, "__args__", (target,))
        final = [arm for arm in arms if arm.__name__ != INTERIM]
        interim = [arm for arm in arms if arm.__name__ == INTERIM]
        if not (final and interim):
            return _compiled(target, "result")
        return _compiled(final[0] if len(final) == 1 else target, "result", _built(interim[0], True))
    return _compiled(target, "params")


def _compiled(target: Any, member: str, interim: _Model | None = None) -> _Model:
    from pydantic import ConfigDict, TypeAdapter, create_model

    ignore = ConfigDict(extra="ignore")
    if member == "result":
        frame = create_model("Response", __config__=ignore, result=(target, ...))
    else:
        field = target.model_fields["params"]
        frame = create_model(target.__name__, __config__=ignore, params=(field.annotation, field))
    name = " | ".join(arm.__name__ for arm in getattr(target, "__args__", (target,)))
    return _Model(TypeAdapter(frame), member, name, interim)


@cache
def _schemas() -> dict:
    """Every check's JSON Schema (as pydantic gives it of the model) and name, and which check
    each (revision, kind, direction, method) takes: {"checks": {"rev|kind|dir|method": index},
    "schemas": [{"name", "member", "schema", "interim"}]}. Kept in a cache file per installed
    mcp-types and pydantic, so that a process reads it in milliseconds instead of building the
    models (a second or more); built from the models, and written, where there is none."""
    versions = [mcp.installed_version("mcp_types"), mcp.installed_version("pydantic")]
    folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcptap")
    path = os.path.join(folder, f"schemas-{versions[0]}-{versions[1]}-{_CACHE_FORMAT}.json")
    if None not in versions:
        try:
            with open(path, "rb") as fh:
                found = orjson.loads(fh.read())
            if type(found) is dict and type(found.get("checks")) is dict and type(found.get("schemas")) is list:
                return found
        except (OSError, ValueError):
            pass
    found = _from_models()
    if None not in versions:
        mcp.write_cache(path, json.dumps(found, separators=(",", ":")))
    return found


def _from_models() -> dict:
    from mcp_types import methods as wire

    checks: dict[str, int] = {}
    schemas: list[dict] = []
    index: dict[int, int] = {}

    def entry(model: _Model) -> int:
        if id(model) not in index:
            interim = None if model.interim is None else entry(model.interim)
            index[id(model)] = len(schemas)
            schemas.append({"name": model.name, "member": model.member, "schema": model.adapter.json_schema(),
                            "interim": interim})
        return index[id(model)]

    for (kind, direction), name in _TABLES.items():
        for (method, revision), target in getattr(wire, name).items():
            checks["|".join((revision, kind, direction, method))] = entry(_built(target, kind == RESPONSE))
    return {"checks": checks, "schemas": schemas}


def unjudged(error) -> bool:
    """The frame nests deeper than pydantic's JSON parser goes (about 200 levels): no verdict."""
    return any(err["type"] == "json_invalid" for err in error.errors(include_url=False))


def violations(error, raw: str | bytes) -> list[tuple[tuple, str]]:
    """(JSON path, what the schema says) of each member that fails, one per path, in order. A
    member that must be one of several types (a content block, a progress token) is judged as
    a whole: by the member that tells them apart (`type`, `method`) when there is one, else as
    matching none of them."""
    errors = [(err["loc"], err) for err in error.errors(include_url=False) if not _owned(err["loc"], err["type"])]
    found: dict[tuple, str] = {}
    for path, words in _judged(errors, jsonwire.parse(raw).value):
        found.setdefault(path, words)
    return [(path, found[path]) for path in sorted(found, key=lambda path: [(type(s) is str, s) for s in path])]


def _owned(loc: tuple, kind: str) -> bool:
    """What other rules say already: params that are no object (params-not-object), and the
    2026-07-28 per-request _meta fields a request lacks (modern-meta-missing)."""
    if loc == ("params",):
        return True
    return kind == "missing" and loc[:2] == ("params", "_meta") and (
        len(loc) == 2 or (len(loc) == 3 and loc[2] in mcp.MODERN_REQUIRED_META))


def _judged(errors: list[tuple[tuple, dict]], node: Any) -> list[tuple[tuple, str]]:
    """(path, words) of errors located from `node`, those inside one of several types said once."""
    out: list[tuple[tuple, str]] = []
    unions: dict[tuple, dict[str, list[tuple[tuple, dict]]]] = {}
    for loc, err in errors:
        path, tag, rest = _place(loc, err, node)
        if tag is None:
            out.append((path, _words(err)))
        else:
            unions.setdefault(path, {}).setdefault(tag, []).append((rest, err))
    for path, members in unions.items():
        out.extend((path + sub, words) for sub, words in _union(members, _at(node, path)))
    return out


def _place(loc: tuple, err: dict, value: Any) -> tuple[tuple, str | None, tuple]:
    """The JSON path of an error's location, and the union member it was judged as (pydantic
    names the member it tried inside the location: a step the value does not have)."""
    path: list = []
    node = value
    for i, step in enumerate(loc):
        if type(step) is int and type(node) is list and 0 <= step < len(node):
            node = node[step]
        elif type(step) is str and type(node) is dict and step in node:
            node = node[step]
        elif i == len(loc) - 1 and err["type"] == "missing":
            pass
        else:
            return tuple(path), str(step), tuple(loc[i + 1:])
        path.append(step)
    return tuple(path), None, ()


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _union(members: dict[str, list[tuple[tuple, dict]]], node: Any) -> list[tuple[tuple, str]]:
    """What a value judged against several types fails, said once."""
    tags = list(members)
    # a failure every alternative has
    shared = [(rest, err) for rest, err in members[tags[0]] if err["type"] != "literal_error"
              and all(any(r == rest and e["type"] == err["type"] for r, e in members[t]) for t in tags[1:])]
    if shared:
        return _judged(shared, node)
    # the member that tells the alternatives apart: a constant each alternative names
    if type(node) is dict:
        for key in sorted({rest[0] for t in tags for rest, err in members[t]
                           if len(rest) == 1 and err["type"] == "literal_error"}, key=str):
            wrong = {t for t in tags if any(r == (key,) and e["type"] == "literal_error" for r, e in members[t])}
            if wrong == set(tags):
                allowed = ", ".join(e["ctx"]["expected"] for t in tags for r, e in members[t] if r == (key,))
                return [((key,), f"{_shown(node.get(key))} is not one of the schema's values: {allowed} "
                                 f"(one of {', '.join(tags)})")]
            chosen = [t for t in tags if t not in wrong]
            if len(chosen) == 1:
                return [(path, f"{words} ({chosen[0]})") for path, words in _judged(members[chosen[0]], node)]
    reasons = "; ".join(f"{t}: {_words(members[t][0][1])}" for t in tags)
    return [((), f"matches none of the schema's alternatives ({reasons})")]


def _words(err: dict) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required by the schema, absent"
    if kind == "literal_error":
        return f"{_shown(err.get('input'))} is not one of the schema's values: {err['ctx']['expected']}"
    text = err["msg"]
    text = text[len("Input "):] if text.startswith("Input ") else text
    return f"{text}, not {_json_type(err.get('input'))}" if kind.endswith("_type") else text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "a boolean"
    if type(value) in (int, float):
        return "a number"
    if type(value) is str:
        return "a string"
    return "an array" if type(value) is list else "an object"


def _shown(value: Any) -> str:
    text = jsonwire.to_json(value) if value is not None else "null"
    return text if len(text) <= 40 else text[:37] + "..."


def describe(path: tuple, words: str) -> str:
    return f"{format_path(path)}: {words}"


MAX_WORDS = 400
"""Characters of one finding's message about a member, at most."""


def instance_errors(validator: Any, instance: Any, at: tuple, whose: str) -> list[str]:
    """What a JSON Schema a session declared (a tool's inputSchema or outputSchema, compiled by
    jsonschema-rs) says of `instance`, found at the JSON path `at` of the message: one message
    per path that fails (the first error there), at most MAX_PATHS, each naming `whose` schema."""
    if validator.is_valid(instance):  # the common case: no error iterator built
        return []
    out, paths = [], set()
    for error in validator.iter_errors(instance):
        path = tuple(error.instance_path)
        if path in paths:
            continue
        paths.add(path)
        out.append(f"{describe(at + path, error.message)} ({whose})"[:MAX_WORDS])
        if len(out) == MAX_PATHS:
            break
    return out
