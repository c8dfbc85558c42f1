"""Operations rules: what the specification requires of the requests that make one logical
operation (analyzer/analysis/logical_operations.py), where the wire shows it. A 2026-07-28 round answered
`input_required` and its retry (MCP 2026-07-28 basic/patterns/mrtr), and a 2025-11-25 task with its
polls, cancellation and result (MCP 2025-11-25 basic/utilities/tasks). Each check gets one `Step`."""

from __future__ import annotations

from mcptap.analysis import mcp
from mcptap.analysis.rules.registry import Hit, rule

MRTR = "MCP 2026-07-28 basic/patterns/mrtr"
TASKS = "MCP 2025-11-25 basic/utilities/tasks"
_MRTR_METHODS = ("tools/call", "prompts/get", "resources/read")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _result(op):
    r = op.response.get("result") if isinstance(op.response, dict) else None
    return r if isinstance(r, dict) else None


@rule("request-state-altered", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Client Requirements 2: "If an InputRequiredResult contains the requestState field, the client '
          'MUST echo back the exact value of that field when retrying the original request"',
      summary="a retry after input_required does not carry the requestState the server issued, exactly")
def request_state_altered(step):
    if step.kind != "retry" or not isinstance(step.issued, str) or step.sent == step.issued:
        return None
    if step.sent is mcp.ABSENT:
        said = "carries none"
    elif not isinstance(step.sent, str):
        said = f"carries {_short(step.sent)}"
    else:
        at = next((i for i, (a, b) in enumerate(zip(step.issued, step.sent)) if a != b),
                  min(len(step.issued), len(step.sent)))
        said = f"the one it carries ({len(step.sent)} characters) differs from character {at}"
    return Hit(f"{step.op.method} retries the round answered input_required at frame {step.before.response_seq}, "
               f"whose requestState ({len(step.issued)} characters, {_short(step.issued)}) it must echo exactly; "
               f"{said}", related=step.before.response_seq)


@rule("request-state-unsolicited", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Client Requirements 2 and 4: "If the InputRequiredResult does not contain a requestState '
          'field, the client MUST NOT include one in the retry"; requestState "MUST NOT be used for any other request"',
      summary="a request carries a requestState the round it retries did not issue, or one issued for another request")
def request_state_unsolicited(step):
    if step.kind != "retry" or step.sent is mcp.ABSENT:
        return None
    if step.foreign:
        return Hit(f"{step.op.method} carries the requestState issued for another request (frame "
                   f"{step.before.seq}, {step.before.method})", related=step.before.response_seq)
    if step.before is not None and step.issued is mcp.ABSENT:
        return Hit(f"{step.op.method} retries the round answered input_required at frame {step.before.response_seq}, "
                   "which issued no requestState, with one", related=step.before.response_seq)
    return None


@rule("retry-id-reused", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Client Requirements 3: "The JSON-RPC id MUST be different between the initial request and the '
          'retry, as they are independent requests"',
      summary="a retry after input_required uses the JSON-RPC id of the request it retries")
def retry_id_reused(step):
    if step.kind != "retry" or step.before is None or step.op.id != step.before.id or \
            type(step.op.id) is not type(step.before.id):
        return None
    return Hit(f"{step.op.method} retry uses id {_short(step.op.id)}, the id of the request it retries "
               f"(frame {step.before.seq})", related=step.before.seq)


@rule("input-required-unsupported", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Supported Requests: InputRequiredResult on prompts/get, resources/read, tools/call; "Servers MUST '
          'NOT send InputRequiredResult responses on any other client requests"',
      summary="a result says input_required to a request other than tools/call, prompts/get or resources/read")
def input_required_unsupported(step):
    result = _result(step.op) if step.kind == "answer" else None
    if result is None or result.get("resultType") != "input_required" or step.op.method in _MRTR_METHODS:
        return None
    return Hit(f"{step.op.method} answered input_required; only tools/call, prompts/get and resources/read may be",
               related=step.op.seq)


@rule("input-required-empty", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Server Requirements 6: "Servers MUST include at least one of inputRequests or requestState in '
          'every InputRequiredResult response"',
      summary="an input_required result carries neither inputRequests nor requestState")
def input_required_empty(step):
    result = _result(step.op) if step.kind == "answer" else None
    if result is None or result.get("resultType") != "input_required":
        return None
    if "inputRequests" in result or "requestState" in result:
        return None
    return Hit(f"{step.op.method} answered input_required with neither inputRequests nor requestState: the client "
               "has nothing to answer and nothing to echo", seq=step.op.response_seq, related=step.op.seq)


@rule("task-created-not-working", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{TASKS} §Task Status Lifecycle: "Tasks MUST begin in the working status when created"',
      summary="a CreateTaskResult gives the new task another status than working")
def task_created_not_working(step):
    if step.kind != "task-created" or step.status == "working":
        return None
    return Hit(f"{step.op.method} created a task whose status is {_short(step.status)}, not working",
               related=step.op.seq)


@rule("task-status-after-terminal", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{TASKS} §Task Status Lifecycle: "Tasks with a completed, failed, or cancelled status are in a terminal '
          'state and MUST NOT transition to any other status"',
      summary="a task reported a status after a terminal one (completed, failed, cancelled) that differs from it")
def task_status_after_terminal(step):
    if step.kind != "task-status" or step.terminal is None or step.status == step.terminal:
        return None
    return Hit(f"task of frame {step.before.seq} reported status {_short(step.status)} after it was "
               f"{step.terminal}", related=step.before.seq)


@rule("task-cancel-terminal-accepted", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{TASKS} §Task Cancellation: "Receivers MUST reject cancellation requests for tasks already in a terminal '
          'status (completed, failed, or cancelled) with error code -32602"',
      summary="tasks/cancel of a task already reported terminal is answered with a result, not error -32602")
def task_cancel_terminal_accepted(step):
    if step.kind != "task-cancel":
        return None
    return Hit(f"tasks/cancel of a task already {step.terminal} (created at frame {step.before.seq}) was answered "
               "with a result; it must be refused with -32602", seq=step.op.response_seq, related=step.op.seq)


@rule("task-result-meta-missing", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{TASKS} §Related Task Metadata: "The tasks/result operation MUST include this metadata in its response" '
          '(_meta["io.modelcontextprotocol/related-task"] with the taskId)',
      summary="a tasks/result result lacks _meta io.modelcontextprotocol/related-task naming its task")
def task_result_meta_missing(step):
    result = _result(step.op) if step.kind == "task-result" else None
    if result is None:
        return None
    meta = result.get("_meta")
    related = meta.get("io.modelcontextprotocol/related-task") if isinstance(meta, dict) else None
    task_id = step.op.params.get("taskId")
    if isinstance(related, dict) and related.get("taskId") == task_id:
        return None
    said = "has none" if related is None else f"names {_short(related)}"
    return Hit(f"tasks/result for task {_short(task_id)}: its result's _meta related-task {said}",
               related=step.op.seq)
