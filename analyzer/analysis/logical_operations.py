"""Logical operations: the paired requests (analyzer/analysis/paired.py) that belong to one thing a
requestor asked for, joined. A 2026-07-28 request answered `input_required` and its retries
(MCP 2026-07-28 basic/patterns/mrtr), and a 2025-11-25 task-augmented request with its
`tasks/get` polls, `tasks/result`, `tasks/cancel` and `notifications/tasks/status` (MCP
2025-11-25 basic/utilities/tasks) are one operation each; every other request is one on its own.

Each paired operation is annotated as it passes (`join`): `operation` (the frame of the
operation's first request, `seq` or `seq:idx` for a batch element), `parent` (the frame of the
request this one continues: the round it retries, the request that created the task), `step`
(request, retry, task-poll, task-result, task-cancel, task-status, notification) and, on the
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
TASK_METHODS = {"tasks/get": "task-poll", "tasks/result": "task-result", "tasks/cancel": "task-cancel"}
TASK_STATUS = "notifications/tasks/status"
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
            if op.method == TASK_STATUS:
                self._status_note(op)
            return
        if op.method in TASK_METHODS:
            self._task_request(op)
        elif op.method in MRTR_METHODS:
            self._round(op)
        result = _result(op)
        task = result.get("task") if result is not None and isinstance(op.params.get("task"), dict) else None
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            t = self.tasks.setdefault((op.direction, task["taskId"]), _Task(op))
            t.seen.append((op.response_seq, task.get("status"), op, "created"))
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
        if op.method == "tasks/cancel":
            task.cancels.append(op)
        if result is not None and "status" in result:
            task.seen.append((op.response_seq, result.get("status"), op, "task-status"))

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


def service_table(rows: Iterable[Timed]) -> list[dict]:
    """`service_times` of every method as table rows: method, calls, errors, tool_errors, unanswered,
    p50_s, p95_s, max_s (None where no latency)."""
    return [{"method": method, "calls": s["calls"], "errors": s["errors"], "tool_errors": s["tool_errors"],
             "unanswered": s["unanswered"], "p50_s": s["latencies"].quantile(0.5),
             "p95_s": s["latencies"].quantile(0.95), "max_s": s["latencies"].max}
            for method, s in service_times(rows).items()]


def service_times(rows: Iterable[Timed], *, joined_only: bool = False) -> dict[str, dict]:
    """The service response time records (analysis/statistics.py's shape: calls, errors, tool_errors,
    unanswered, a LatencySketch of latencies) per method, counted by operation: the one definition of
    `mcptap analyze`'s table and of `mcptap.data.latency` over `mcptap.data.operations`. `rows`: each
    paired request and notification (those are left out). A call per operation, of its first request's method; its latency from the first
    request to the answer that ends it; an error or tool error by that answer; an operation without
    that answer (its last answer input_required, or no answer) unanswered, unless cancelled or a task
    (whose result was not fetched). `joined_only`: only the methods that start a joined operation."""
    from mcptap.analysis.latency import LatencySketch

    groups: dict[Any, list[Timed]] = {}
    for row in rows:
        if row.outcome != paired.NOTIFICATION and row.operation is not None:
            groups.setdefault(row.operation, []).append(row)
    for members in groups.values():
        members.sort(key=lambda r: (r.seq, r.idx))
    joined = {members[0].method for members in groups.values() if len(members) > 1} if joined_only else None
    out: dict[str, dict] = {}
    for members in groups.values():
        method = members[0].method
        if joined is not None and method not in joined:
            continue
        stats = out.setdefault(method, {"calls": 0, "errors": 0, "tool_errors": 0, "unanswered": 0,
                                        "latencies": LatencySketch()})
        stats["calls"] += 1
        end = next((r for r in members if r.operation_latency_s is not None), None)
        if end is not None:
            stats["latencies"].add(end.operation_latency_s)
            stats["errors"] += end.outcome == paired.ERROR
            stats["tool_errors"] += end.outcome == paired.TOOL_ERROR
        elif members[-1].outcome != paired.CANCELLED and not any(r.step and r.step.startswith("task") for r in members):
            stats["unanswered"] += 1
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
