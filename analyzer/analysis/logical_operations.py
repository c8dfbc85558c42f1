"""Logical operations: the paired requests (analyzer/analysis/paired.py) that belong to one thing a
requestor asked for, joined. A 2026-07-28 request answered `input_required` and its retries
(MCP 2026-07-28 basic/patterns/mrtr), a 2025-11-25 task-augmented request with its
`tasks/get` polls, `tasks/result`, `tasks/cancel` and `notifications/tasks/status` (MCP
2025-11-25 basic/utilities/tasks), and a 2026-07-28 request answered with a CreateTaskResult
(`resultType: "task"`, the io.modelcontextprotocol/tasks extension, SEP-2663) with its `tasks/get`
polls, `tasks/update`, `tasks/cancel` and `notifications/tasks` are one operation each; every
other request is one on its own. A 2025-11-25 task ends at its `tasks/result` answer, a 2026-07-28
one at the first `tasks/get` answer that reports it terminal (completed, failed, cancelled).

Each paired operation is annotated as it passes (`join`): `operation` (the frame of the
operation's first request, `seq` or `seq:idx` for a batch element), `parent` (the frame of the
request this one continues: the round it retries, the request that created the task), `step`
(request, retry, task-poll, task-update, task-result, task-cancel, task-status, notification) and, on the
one whose answer ends the operation, `operation_latency_s`, from the first request to that
answer. The operations rules (analyzer/analysis/rules/operation_checks.py) judge each step (`Step`).
Pure: paired operations in, the same annotated, and finding rows; memory grows with the rounds
awaiting their retry and the tasks of the session."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from mcptap.analysis import mcp, paired, rules
from mcptap.analysis.messages import Finding, Message

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The client requests a server may answer with an InputRequiredResult (S/2026-07-28 mrtr §Supported Requests)."""
TASK_METHODS = {"tasks/get": "task-poll", "tasks/result": "task-result", "tasks/cancel": "task-cancel",
                "tasks/update": "task-update"}
TASK_STATUS = frozenset({"notifications/tasks/status", "notifications/tasks"})
"""A task's status notification: 2025-11-25's, and the tasks extension's (2026-07-28)."""
TASK_RESULT = "task"
"""The `resultType` of a CreateTaskResult (the tasks extension, 2026-07-28)."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK = "io.modelcontextprotocol/related-task"
INPUT_REQUIRED = "input_required"


@dataclass(slots=True)
class Step:
    """What the operations rules judge: one paired operation (`op`) in its logical operation.
    `kind`: `answer` (any answered request), `retry` (a request carrying requestState or
    inputResponses), `task-created` (a CreateTaskResult), `task-status` (a status a task reported
    after a terminal one), `task-cancel` (a task reported terminal, cancelled), `task-result`.
    `before`: the paired operation this one continues; `issued`: the requestState the round it
    retries asked for (ABSENT: none); `sent`: the one it carried; `foreign`: `sent` is a state
    issued for another request; `status`, `terminal`: the status reported now, the terminal
    status the task reported before (None: none)."""

    kind: str
    op: paired.Operation
    before: paired.Operation | None = None
    issued: Any = mcp.ABSENT
    sent: Any = mcp.ABSENT
    foreign: bool = False
    status: Any = None
    terminal: str | None = None


@dataclass(slots=True)
class _Round:
    first: paired.Operation
    last: paired.Operation
    state: Any


@dataclass(slots=True)
class _Task:
    first: paired.Operation
    extension: bool = False  # a task of the tasks extension (2026-07-28), not a 2025-11-25 one
    ended: bool = False  # an answer ended it (its result fetched, or reported terminal)
    seen: list[tuple[int, Any, paired.Operation, str]] = field(default_factory=list)  # (seq, status, op, step kind)
    cancels: list[paired.Operation] = field(default_factory=list)


def ref(op: paired.Operation) -> str:
    """How an operation names the request frame it starts at: `seq`, or `seq:idx` in a batch."""
    return str(op.seq) if op.idx is None else f"{op.seq}:{op.idx}"


def _result(op: paired.Operation) -> dict | None:
    r = op.response.get("result") if isinstance(op.response, dict) else None
    return r if isinstance(r, dict) else None


def _key(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


class Joiner:
    """Feed paired operations in the order `paired.operations` gives them (a request once
    answered, in answer order); `finish()` at the end. `steps` collects what the rules judge."""

    def __init__(self) -> None:
        self.rounds: dict[tuple, _Round] = {}  # (direction, method, target) -> the round awaiting its retry
        self.states: dict[str, tuple] = {}  # requestState issued -> the key of its round
        self.tasks: dict[tuple[str, str], _Task] = {}  # (requestor direction, taskId) -> the task
        self.steps: list[Step] = []

    def feed(self, op: paired.Operation) -> None:
        op.operation, op.step = ref(op), "request"
        if op.outcome == paired.NOTIFICATION:
            op.step = "notification"
            if op.method in TASK_STATUS:
                self._status_note(op)
            return
        if op.method in TASK_METHODS:
            self._task_request(op)
        elif op.method in MRTR_METHODS:
            self._round(op)
        result = _result(op)
        task = result.get("task") if result is not None and isinstance(op.params.get("task"), dict) else None
        extension = task is None and result is not None and result.get("resultType") == TASK_RESULT and (
            op.method not in TASK_METHODS)
        if extension:
            task = result
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            t = self.tasks.setdefault((op.direction, task["taskId"]), _Task(op, extension))
            t.seen.append((op.response_seq, task.get("status"), op, "created"))
            if not extension:  # the extension's seed state may be any status (SEP-2663 §Creating a task)
                self.steps.append(Step("task-created", op, status=task.get("status")))
            op.operation_latency_s = None
            return  # a task's first answer does not end it
        if op.response is not None and op.operation_latency_s is None and op.step == "request" and not (
                result is not None and result.get("resultType") == INPUT_REQUIRED):
            op.operation_latency_s = op.latency_s
        if op.response is not None:
            self.steps.append(Step("answer", op))

    def _round(self, op: paired.Operation) -> None:
        params = op.params
        target = params.get("uri") if op.method == "resources/read" else params.get("name")
        key = (op.direction, op.method, _key(target))
        sent = params.get("requestState", mcp.ABSENT)
        retrying = sent is not mcp.ABSENT or "inputResponses" in params
        round_ = self.rounds.pop(key, None)
        first = op
        if round_ is not None and retrying:
            if isinstance(round_.state, str):
                self.states.pop(round_.state, None)
            op.operation, op.parent, op.step = ref(round_.first), round_.last.seq, "retry"
            first = round_.first
            self.steps.append(Step("retry", op, round_.last, round_.state, sent))
        elif retrying:
            op.step = "retry"
            owner = self.states.get(sent) if isinstance(sent, str) else None
            other = self.rounds.get(owner) if owner is not None and owner != key else None
            if other is not None:
                self.steps.append(Step("retry", op, other.last, mcp.ABSENT, sent, foreign=True))
        elif round_ is not None and isinstance(round_.state, str):
            self.states.pop(round_.state, None)  # a fresh request: the round before was left
        result = _result(op)
        if result is not None and result.get("resultType") == INPUT_REQUIRED:
            state = result.get("requestState", mcp.ABSENT)
            self.rounds[key] = _Round(first, op, state)
            if isinstance(state, str):
                self.states[state] = key
        elif op.response is not None:
            op.operation_latency_s = None if op.response_ts is None else op.response_ts - first.ts

    def _task_request(self, op: paired.Operation) -> None:
        task_id = op.params.get("taskId")
        task = self.tasks.get((op.direction, task_id)) if isinstance(task_id, str) else None
        if task is None:
            if op.method == "tasks/result" and op.response is not None:
                self.steps.append(Step("task-result", op))
            return
        op.operation, op.parent, op.step = ref(task.first), task.first.seq, TASK_METHODS[op.method]
        result = _result(op)
        if op.method == "tasks/result":
            if op.response is not None:
                op.operation_latency_s = None if op.response_ts is None else op.response_ts - task.first.ts
                self.steps.append(Step("task-result", op, task.first))
            return
        if op.method == "tasks/cancel" and not task.extension:  # the extension acknowledges any cancel
            task.cancels.append(op)
        if result is not None and "status" in result:
            task.seen.append((op.response_seq, result.get("status"), op, "task-status"))
            if task.extension and not task.ended and op.method == "tasks/get" and result.get("status") in TERMINAL:
                task.ended = True  # the extension's task ends at the poll that reports it terminal
                op.operation_latency_s = None if op.response_ts is None else op.response_ts - task.first.ts

    def _status_note(self, op: paired.Operation) -> None:
        task_id = op.params.get("taskId")
        requestor = mcp.OTHER.get(op.direction, op.direction)
        task = self.tasks.get((requestor, task_id)) if isinstance(task_id, str) else None
        if task is None:
            return
        op.operation, op.parent, op.step = ref(task.first), task.first.seq, "task-status"
        task.seen.append((op.seq, op.params.get("status"), op, "task-status"))

    def finish(self) -> None:
        """Judge each task's reported statuses in wire order (a status notification comes out of
        the paired view last, whenever it was sent)."""
        for task in self.tasks.values():
            terminal: str | None = None
            since: int | None = None
            for seq, status, op, _kind in sorted(task.seen, key=lambda s: s[0] if s[0] is not None else -1):
                if terminal is not None:
                    self.steps.append(Step("task-status", op, task.first, status=status, terminal=terminal))
                elif isinstance(status, str) and status in TERMINAL:
                    terminal, since = status, seq
            for op in task.cancels:
                if terminal is not None and since is not None and since < op.seq and _result(op) is not None:
                    self.steps.append(Step("task-cancel", op, task.first, terminal=terminal))


def join(ops: Iterable[paired.Operation], joiner: Joiner | None = None) -> Iterator[paired.Operation]:
    """The paired operations, each annotated with its logical operation as it passes."""
    joiner = joiner if joiner is not None else Joiner()
    for op in ops:
        joiner.feed(op)
        yield op
    joiner.finish()


@dataclass(frozen=True, slots=True)
class Member:
    """A frame's place in a joined operation: the operation (its first request's frame), the step
    of the paired request the frame asks or answers, the request that one continues, whether the
    frame is the answer, and on the answer that ends the operation, the operation's latency."""

    operation: str
    step: str
    parent: int | None = None
    latency_s: float | None = None
    answer: bool = False


def members(ops: Iterable[paired.Operation]) -> dict[int, Member]:
    """Frame seq -> its Member, for the frames of joined operations (more than one paired request
    or notification) among these annotated operations; the others are operations of their own."""
    groups: dict[str, list[paired.Operation]] = {}
    for op in ops:
        if op.operation is not None:
            groups.setdefault(op.operation, []).append(op)
    out: dict[int, Member] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        for op in group:
            out.setdefault(op.seq, Member(op.operation, op.step, op.parent))
            if op.response_seq is not None:
                out[op.response_seq] = Member(op.operation, op.step, op.parent, op.operation_latency_s, True)
    return out


def method_stats(ops: Iterable[paired.Operation]) -> dict[str, dict]:
    """Service response time records (`service_times`) of the methods that start a joined operation
    (more than one paired request) in these annotated operations: what replaces the session's own
    per-message records of those methods in `mcptap analyze`'s table."""
    return service_times((Timed(op.operation, op.seq, op.idx or 0, op.method, op.outcome, op.step,
                                op.operation_latency_s) for op in ops), joined_only=True)


class Timed(NamedTuple):
    """What the service response time table reads of one paired request (or notification)."""
    operation: Any  # the operation it belongs to (any key; None: none)
    seq: int
    idx: int
    method: str
    outcome: str
    step: str | None
    operation_latency_s: float | None


class Counted(NamedTuple):
    """One call in the service response time table: its method, its latency (None: not timed), and
    whether it ended in a JSON-RPC error, a tool error, or is counted unanswered."""
    method: str
    latency_s: float | None
    error: bool
    tool_error: bool
    unanswered: bool


def counted(rows: Iterable[Timed], *, joined_only: bool = False) -> Iterator[Counted]:
    """The calls of these paired requests (notifications are left out), counted by operation: the
    one definition of `mcptap analyze`'s table, of `mcptap.data.latency` and of the HTML report's.
    A call per operation, of its first request's method; its latency from the first request to
    the answer that ends it; an error or tool error by that answer; an operation without that
    answer (its last answer input_required, or no answer) unanswered, unless cancelled or a task
    (whose result was not fetched). `joined_only`: only the operations of more than one request."""
    groups: dict[Any, list[Timed]] = {}
    for row in rows:
        if row.outcome != paired.NOTIFICATION and row.operation is not None:
            groups.setdefault(row.operation, []).append(row)
    for members in groups.values():
        if joined_only and len(members) < 2:
            continue
        members.sort(key=lambda r: (r.seq, r.idx))
        end = next((r for r in members if r.operation_latency_s is not None), None)
        if end is not None:
            yield Counted(members[0].method, end.operation_latency_s, end.outcome == paired.ERROR,
                          end.outcome == paired.TOOL_ERROR, False)
        else:
            yield Counted(members[0].method, None, False, False, members[-1].outcome != paired.CANCELLED and not any(
                r.step and r.step.startswith("task") for r in members))


def service_times(rows: Iterable[Timed], *, joined_only: bool = False) -> dict[str, dict]:
    """The service response time records (analysis/statistics.py's shape: calls, errors, tool_errors,
    unanswered, a LatencySketch of latencies) per method of these paired requests' calls
    (`counted`). `joined_only`: only the methods that start a joined operation (more than one
    request), each counting all its operations, joined or not."""
    from mcptap.analysis.latency import LatencySketch

    rows = list(rows)
    calls = list(counted(rows))
    if joined_only:
        joined = {c.method for c in counted(rows, joined_only=True)}
        calls = [c for c in calls if c.method in joined]
    out: dict[str, dict] = {}
    for call in calls:
        stats = out.setdefault(call.method, {"calls": 0, "errors": 0, "tool_errors": 0, "unanswered": 0,
                                             "latencies": LatencySketch()})
        stats["calls"] += 1
        if call.latency_s is not None:
            stats["latencies"].add(call.latency_s)
        stats["errors"] += call.error
        stats["tool_errors"] += call.tool_error
        stats["unanswered"] += call.unanswered
    return out


def session_members(session_id: str, frames: list[tuple[int, float, str, bytes]]) -> dict[int, Member]:
    """Frame seq -> its Member for each paired request and answer of a session's frames (seq, ts,
    direction, raw, in seq order), joined from their own shapes, no analysis needed; unlike
    `members`, an operation of one request too (a round answered input_required and never
    retried has no answer that ends it): what the pandas API and the report read to count
    operations as `mcptap analyze` does."""
    out: dict[int, Member] = {}
    for op in join(paired.operations(session_id, frames, _rows(frames))):
        if op.outcome == paired.NOTIFICATION:
            continue
        out.setdefault(op.seq, Member(op.operation, op.step, op.parent))
        if op.response_seq is not None:
            out[op.response_seq] = Member(op.operation, op.step, op.parent, op.operation_latency_s, True)
    return out


def _rows(frames: list[tuple[int, float, str, bytes]]) -> list[Message]:
    """Message rows enough for `paired.operations` (its kinds) from the frames' own shapes."""
    rows = []
    for seq, _ts, direction, raw in frames:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        for idx, v in ([(i, x) for i, x in enumerate(value)] if isinstance(value, list) else [(None, value)]):
            if not isinstance(v, dict):
                continue
            kind = ("request" if "id" in v else "notification") if isinstance(v.get("method"), str) else (
                "response" if "result" in v else "error" if "error" in v else None)
            if kind is not None:
                rows.append(Message(None, seq, idx, direction, kind, None, None, None, None))
    return rows


def findings(session_id: str, frames: list[tuple[int, float, str, bytes]], revision: str | None,
             policy=None) -> list[Finding]:
    """The operations findings of a session's frames (seq, ts, direction, raw), as finding rows."""
    return judge(session_id, frames, revision, policy)[0]


def judge(session_id: str, frames: Iterable[tuple[int, float, str, bytes]], revision: str | None,
          policy=None) -> tuple[list[Finding], dict[str, dict]]:
    """(the operations findings, `method_stats` of the joined operations) of a session's frames
    (seq, ts, direction, raw, in seq order; read twice: a list, or an iterable that reads them
    again each time); nothing without a known revision. Memory holds what joins operations (the
    rounds awaiting a retry, the tasks, the requests awaiting their answer) and a small record of
    each operation, never every frame or every parsed message: each step is judged as it comes."""
    if revision is None:
        return [], {}
    joiner = Joiner()
    found: list[Finding] = []
    records: list[Timed] = []
    for op in join(paired.operations(session_id, frames, _rows(frames)), joiner):
        records.append(Timed(op.operation, op.seq, op.idx or 0, op.method, op.outcome, op.step,
                             op.operation_latency_s))
        if joiner.steps:
            found.extend(judged(session_id, joiner.steps, revision, policy))
            joiner.steps.clear()
    found.extend(judged(session_id, joiner.steps, revision, policy))
    joiner.steps.clear()
    return found, service_times(records, joined_only=True)


_ON_ANSWER = ("answer", "task-result", "task-status", "task-created")
"""The steps whose findings are on the answer's frame (the others: on the request's)."""


def judged(session_id: str, steps: list[Step], revision: str | None, policy=None) -> list[Finding]:
    """The finding rows of the operations rules over these steps."""
    checks = [r for r in rules.load().values() if "operation" in r.on]
    out = []
    for step in steps:
        for rule in checks:
            hit = rule.check(step)
            if hit is None:
                continue
            severity = hit.severity or rule.severity_for(revision)
            if policy is not None:
                severity = policy.severity(rule.code, severity)
                if severity is None:
                    continue
            seq, idx = step.op.seq, step.op.idx
            if step.kind in _ON_ANSWER and step.op.response_seq is not None and step.op.outcome != paired.NOTIFICATION:
                seq, idx = step.op.response_seq, None
            out.append(Finding(session_id, hit.seq if hit.seq is not None else seq,
                               hit.idx if hit.seq is not None else idx, rule.code, severity, hit.message, hit.related))
    return out
