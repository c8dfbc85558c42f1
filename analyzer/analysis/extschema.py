"""The official extensions' messages against the JSON Schema their extension publishes: the tasks
extension's (modelcontextprotocol/ext-tasks schema/draft/schema.json, the $defs its messages need,
kept in ext_tasks.schema.json), compiled once per type by jsonschema-rs (the `[schema]` extra; without
it they are not checked). The skills extension publishes none. A request's or notification's whole
message is judged, a result its `result` member; what fails is a `schema-violation`
(analyzer/analysis/results.py adds it), one per JSON path."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from mcptap.analysis import mcp
from mcptap.analysis.classify import NOTIFICATION, REQUEST, RESPONSE

try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - an install without the [schema] extra
    jsonschema_rs = None

_FILES = {mcp.TASKS_EXTENSION: "ext_tasks.schema.json"}
TYPES: dict[tuple[str, str, str], tuple[str, str | None]] = {
    (REQUEST, mcp.C2S, "tasks/get"): ("GetTaskRequest", None),
    (REQUEST, mcp.C2S, "tasks/update"): ("UpdateTaskRequest", None),
    (REQUEST, mcp.C2S, "tasks/cancel"): ("CancelTaskRequest", None),
    (RESPONSE, mcp.S2C, "tasks/get"): ("GetTaskResult", "result"),
    (RESPONSE, mcp.S2C, "tasks/update"): ("UpdateTaskResult", "result"),
    (RESPONSE, mcp.S2C, "tasks/cancel"): ("CancelTaskResult", "result"),
    (NOTIFICATION, mcp.S2C, "notifications/tasks"): ("TaskStatusNotification", None),
}
"""(kind, direction, method; a response by its request's method) -> (the schema's type, the member
judged, None for the whole message)."""
CREATE_TASK = ("CreateTaskResult", "result")
"""A `resultType: "task"` answer (to tools/call)."""


@cache
def _document(extension: str) -> dict:
    with open(os.path.join(os.path.dirname(__file__), _FILES[extension]), encoding="utf-8") as fh:
        return json.load(fh)


@cache
def _validator(extension: str, name: str) -> Any:
    doc = _document(extension)
    return jsonschema_rs.validator_for({"$schema": doc["$schema"], "$ref": f"#/$defs/{name}", "$defs": doc["$defs"]})


def check_of(revision: str, kind: str, direction: str, method: str, value: Any) -> tuple[str, str, str | None] | None:
    """(extension, type, member) that judges this message (`value`, parsed), or None: not an official
    extension's message in this revision, or jsonschema-rs missing."""
    if jsonschema_rs is None:
        return None
    if kind == RESPONSE and type(value) is dict and type(value.get("result")) is dict \
            and value["result"].get("resultType") == "task":
        return (mcp.TASKS_EXTENSION, *CREATE_TASK)
    found = TYPES.get((kind, direction, method))
    if found is None:
        return None
    extension = mcp.extension_of(revision, direction if kind != RESPONSE else mcp.OTHER[direction], method,
                                 kind != NOTIFICATION)
    return None if extension is None else (extension, *found)


def violations(check: tuple[str, str, str | None], value: Any) -> list[tuple[tuple, str]]:
    """(JSON path from the message, what the schema says) of each place `value` fails, one per path."""
    extension, name, member = check
    target = value.get(member) if member is not None and type(value) is dict else value
    out: dict[tuple, str] = {}
    for error in _validator(extension, name).iter_errors(target):
        path = ((member,) if member else ()) + tuple(error.instance_path)
        out.setdefault(path, error.message)
    return list(out.items())
