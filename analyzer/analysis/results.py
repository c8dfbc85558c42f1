"""A session's messages checked against schemas, once each, where the session core has the frame:
the revision's schema (analyzer/analysis/schema_validation.py: `schema-violation`) and, for a tools/call
result, the `outputSchema` the same session declared for that tool in a tools/list result
(`structured-content-mismatch`; skipped when the result is `isError`). An output schema is
compiled once (jsonschema-rs, never fetching a `$ref`; the `[schema]` extra) and kept by its
text in a bounded cache; without jsonschema-rs results are not checked against output schemas.

A message is judged on what the session core read of it: the frame as orjson reads it where the
core parsed it, and on the fast path the bytes of its params or result as the native scanner
found them (`member`; empty where it is absent). A conformant member's verdict is kept by those
bytes and its check (`Verdicts`, bounded in entries and bytes, least recently used first out):
the same bytes again cost a lookup, never a parse (the verdict is a function of the member alone:
the checks' schemas judge the params or the result and nothing else of the frame). A message that fails is judged
afresh every time, so a violation that repeats is reported each time.

Either check is skipped whole when the policy silences its code: `mcptap analyze --ignore-code
schema-violation --ignore-code structured-content-mismatch` analyses without them."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from mcptap.analysis import extschema, mcp
from mcptap.analysis.classify import NOTIFICATION, REQUEST, RESPONSE
from mcptap.analysis.rules import RULES, Hit, load
from mcptap.analysis.schema_validation import Failed, checker, describe, unjudged
from mcptap.wire import jsonwire

try:  # the [schema] extra
    import jsonschema_rs
except ImportError:  # pragma: no cover - an install without it
    jsonschema_rs = None

SCHEMA_CODE, CONTENT_CODE = "schema-violation", "structured-content-mismatch"
TOOL_CALL, TOOL_LIST = "tools/call", "tools/list"
COMPILED_MAX = 256
"""Output schemas kept compiled at once (by their text), in all sessions of a process."""
_COMPILED: OrderedDict[bytes, Any] = OrderedDict()


class Verdicts:
    """The members found conformant, by (check, member bytes): at most MAX_ENTRIES of them and
    MAX_BYTES of their bytes, least recently used out first; a member past MAX_MEMBER is not kept."""

    MAX_ENTRIES = 8192
    MAX_BYTES = 8 << 20
    MAX_MEMBER = 256 << 10

    def __init__(self):
        self.kept: OrderedDict[tuple, int] = OrderedDict()
        self.size = 0

    def known(self, key: tuple) -> bool:
        """Whether this member passed this check before (then it is the most recent)."""
        if key in self.kept:
            self.kept.move_to_end(key)
            return True
        return False

    def conformant(self, key: tuple, size: int) -> None:
        if size > self.MAX_MEMBER or key in self.kept:
            return
        self.kept[key] = size
        self.size += size
        while len(self.kept) > self.MAX_ENTRIES or self.size > self.MAX_BYTES:
            self.size -= self.kept.popitem(last=False)[1]


VERDICTS = Verdicts()
"""The verdicts of all sessions of a process (a member's verdict depends on nothing else)."""


def _task_created(kind: str, value) -> bool:
    """Whether an answer is a CreateTaskResult (a 2025-11-25 task-augmented request's: `{"task": {...}}`;
    the 2026-07-28 tasks extension's: `resultType: "task"`), which the revisions' models leave out: not
    judged by the schema (docs/findings.md)."""
    return kind == RESPONSE and type(value) is dict and (type(value.get("task")) is dict or (
        type(value.get("resultType")) is str and value["resultType"] in mcp.EXTENSION_RESULT_TYPES))


MAX_EXTENSION_PATHS = 8
_EXTENSION_METHODS = frozenset(method for _, _, method in extschema.TYPES)


def _enabled(policy, code: str) -> bool:
    return policy is None or policy.severity(code, "error") is not None


class MessageChecks:
    """Feed each message with `message()` (the fast path: its raw bytes) or `exact()`; findings
    go to `add(rule, hit, seq, idx)`, the session's."""

    def __init__(self, revision: str, policy, add):
        load()
        self.revision = revision
        self.add = add
        self.schema_rule, self.content_rule = RULES[SCHEMA_CODE], RULES[CONTENT_CODE]
        self.schemas = _enabled(policy, SCHEMA_CODE)
        self.contents = jsonschema_rs is not None and _enabled(policy, CONTENT_CODE)
        self.output_schemas: dict[str, Any] = {}  # tool name -> the outputSchema its last listing declared

    @classmethod
    def hooks(cls, revision: str | None, policy, add) -> tuple:
        """The session core's two calls, `message` and `exact`: calls that do nothing when the
        revision is unknown or the policy silences both codes."""
        if revision is None or not (_enabled(policy, SCHEMA_CODE) or (jsonschema_rs is not None
                                                                      and _enabled(policy, CONTENT_CODE))):
            return _nothing, _nothing
        checks = cls(revision, policy, add)
        return checks.message, checks.exact

    def exact(self, msg, raw: str | bytes | None, frame: Any = None) -> None:
        """A message the exact path read (`raw`: the frame, or None for a batch's element;
        `frame`: the frame as orjson reads it, when the exact path read it so: not parsed again)."""
        kind = msg.kind
        if kind == REQUEST or kind == NOTIFICATION:
            method, req = msg.method, msg
        elif kind == RESPONSE:
            req = msg.request
            method = req.method if req is not None else None
        else:
            return
        if type(method) is str:
            self.message(kind, msg.direction, method, jsonwire.to_json(msg.value) if raw is None else raw, req,
                         msg.seq, msg.idx, frame)

    def _extension(self, kind: str, direction: str, method: str, raw: str | bytes, seq: int, idx: int | None) -> None:
        """A message of an official extension against the schema it publishes (analysis/extschema.py)."""
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        check = extschema.check_of(self.revision, kind, direction, method, value)
        if check is None:
            return
        for path, words in extschema.violations(check, value)[:MAX_EXTENSION_PATHS]:
            self.add(self.schema_rule, Hit(f"{describe(path, words)} ({check[1]}, {check[0]} schema)"[:400]), seq, idx)

    def message(self, kind: str, direction: str, method: str, raw: str | bytes, req, seq: int,
                idx: int | None, frame: Any = None, member: bytes | None = None) -> None:
        """`method`: a response's request's. `req`: a request, or the request a response answers.
        `frame`: `raw` as orjson reads it, when the caller has it (None: `raw` is parsed here, if
        it must be). `member`: the bytes of its params or result (empty: absent), when the scanner
        gave them (the key of its verdict)."""
        if not self.schemas and not (self.contents and method in (TOOL_CALL, TOOL_LIST)):
            return
        check = checker(self.revision, kind, direction, method)
        if check is None:
            if self.schemas and method in _EXTENSION_METHODS:
                self._extension(kind, direction, method, raw, seq, idx)
            return
        if member is not None:
            key = (check.key, member)
            if VERDICTS.known(key):
                if self.contents and direction == (mcp.C2S if kind == REQUEST else mcp.S2C):
                    self._known(kind, method, member, frame, check.member, req, seq, idx)
                return
        try:
            value = check.validate(raw, frame)
            if member is not None:
                VERDICTS.conformant(key, len(member))
        except Failed as failed:
            value = _member(raw, check.member)  # what it says is still what the session declared
            if self.schemas and _task_created(kind, value):
                self._extension(kind, direction, method, raw, seq, idx)  # by the tasks extension's schema
            elif self.schemas and not unjudged(failed.error):
                for hit in self.schema_rule.check((failed.check, failed.error, raw, self.revision), None) or ():
                    self.add(self.schema_rule, hit, seq, idx)
        if self.contents and type(value) is dict and direction == (mcp.C2S if kind == REQUEST else mcp.S2C):
            self._semantics(kind, method, value, req, seq, idx)

    def _known(self, kind: str, method: str, member: bytes, frame: Any, name: str, req, seq: int,
               idx: int | None) -> None:
        """`_semantics` of a message known conformant: its member parsed only where they read it
        (a tools/call, a tools/list result, a tools/call result whose tool declared an outputSchema)."""
        if kind == RESPONSE and method == TOOL_CALL:
            tool = req.tool_name if req is not None else None
            if tool is None or self.output_schemas.get(tool) is None:
                return
        elif not ((kind == RESPONSE and method == TOOL_LIST) or (kind == REQUEST and method == TOOL_CALL)):
            return
        if type(frame) is dict:
            value = frame.get(name)
        else:
            try:
                value = orjson.loads(member)
            except orjson.JSONDecodeError:  # past what orjson reads: as `validate` gives it, nothing
                return
        if type(value) is dict:
            self._semantics(kind, method, value, req, seq, idx)

    def _semantics(self, kind: str, method: str, value: dict, req, seq: int, idx: int | None) -> None:
        if method == TOOL_CALL:
            if kind == REQUEST:
                name = value.get("name")
                req.tool_name = name if type(name) is str else None
            elif kind == RESPONSE and not _task_created(kind, value):
                self._call_result(value, req.tool_name, req, seq, idx)
        elif method == TOOL_LIST and kind == RESPONSE and type(value.get("tools")) is list:
            for tool in value["tools"]:
                if type(tool) is dict and type(tool.get("name")) is str:
                    self.output_schemas[tool["name"]] = tool.get("outputSchema")

    def _call_result(self, result: dict, tool: str | None, req, seq: int, idx: int | None) -> None:
        schema = self.output_schemas.get(tool) if tool is not None else None
        if schema is None or result.get("isError") is True or result.get("resultType", "complete") != "complete":
            return
        validator = compiled(schema)
        if validator is None:
            return
        for hit in self.content_rule.check((tool, validator, result.get("structuredContent")), None) or ():
            self.add(self.content_rule, Hit(hit.message, related=req.seq if req is not None else None), seq, idx)


def _member(raw: str | bytes, member: str) -> Any:
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return frame.get(member) if type(frame) is dict else None


def _nothing(*_args) -> None:
    return None


def compiled(schema: Any) -> Any:
    """The validator of an output schema (None: not a schema jsonschema-rs can compile)."""
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # nothing orjson parsed, but said anyway: not judged
        return None
    found = _COMPILED.get(key)
    if found is not None or key in _COMPILED:
        _COMPILED.move_to_end(key)
        return found
    try:
        found = jsonschema_rs.validator_for(schema, offline=True)
    except Exception:  # noqa: BLE001 - whatever a server declared that jsonschema-rs cannot compile
        found = None
    _COMPILED[key] = found
    if len(_COMPILED) > COMPILED_MAX:
        _COMPILED.popitem(last=False)
    return found
