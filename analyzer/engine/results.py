"""What an analysis gives back: the Report of a database (its sessions' summaries, findings and
method statistics, whether the results were stored), each session's result as a worker hands it
over, and AnalysisFailed."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcptap.analysis.latency import LatencySketch
from mcptap.analysis.messages import Finding
from mcptap.errors import MCPTapError


class AnalysisFailed(MCPTapError):
    """Sessions could not be analysed (mcptap's bug, or a worker process killed): never a
    finding, always an error. The sessions that were analysed keep their stored results;
    `report` holds them."""

    def __init__(self, message: str, report: "Report"):
        super().__init__(message)
        self.report = report


@dataclass
class Report:
    sessions: list[dict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    methods: dict[str, dict] = field(default_factory=dict)  # per method: calls, errors, tool_errors, unanswered,
    # latencies (a LatencySketch)
    stored: bool = False
    not_stored_reason: str | None = None
    db_path: str = ""
    started_at: float | None = None  # when the analysis began and ended, Unix seconds
    ended_at: float | None = None
    cost: dict | None = None  # what the servers cost in a model's context (analyzer/analysis/cost.py), when asked
    recorded: dict[str, tuple] = field(default_factory=dict)  # per session read whole: (c2s, s2c, last ts), as the
    # frames were read (the report's counts without counting them in the store again)


@dataclass
class SessionResult:
    summary: dict
    findings: list[Finding]
    methods: dict[str, dict]
    frames: int
    not_stored_reason: str | None = None
    failed: str | None = None  # why the session could not be analysed (then it has no results)
    declared: tuple | None = None  # (its last definitions, its label), when the cost was asked for and it declared any
    recorded: tuple | None = None  # (frames c2s, frames s2c, the last frame's ts) of what was read (`Seen`)


class Seen:
    """What a session's frames say of themselves as they are read: how many each way and the
    latest ts (the counts `store.list_sessions` makes with a scan of the frames table)."""

    __slots__ = ("c2s", "s2c", "last_ts", "known")

    def __init__(self):
        self.c2s = self.s2c = 0
        self.last_ts = None
        self.known = True

    def add(self, chunk: list) -> None:
        """A chunk of rows beginning (seq, ts, direction, ...)."""
        directions = [direction for _seq, _ts, direction, *_rest in chunk]
        self.c2s += directions.count("c2s")
        self.s2c += directions.count("s2c")
        try:
            latest = max(ts for _seq, ts, *_rest in chunk)
        except (TypeError, ValueError):  # a ts cell of another type: counted by the store instead
            self.known = False
            return
        if type(latest) not in (float, int):
            self.known = False
        elif self.last_ts is None or latest > self.last_ts:
            self.last_ts = latest

    def figures(self) -> tuple | None:
        return (self.c2s, self.s2c, self.last_ts) if self.known else None


def merge_methods(total: dict, stats: dict) -> None:
    for method, s in stats.items():
        t = total.setdefault(method, {"calls": 0, "errors": 0, "tool_errors": 0, "unanswered": 0,
                                      "latencies": LatencySketch()})
        t["calls"] += s["calls"]
        t["errors"] += s["errors"]
        t["tool_errors"] += s.get("tool_errors", 0)
        t["unanswered"] += s["unanswered"]
        t["latencies"].merge(s["latencies"])
