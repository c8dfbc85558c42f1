"""The MCP semantic conventions' duration histograms (release v0.1.0 of OpenTelemetry's GenAI
conventions, docs/gen-ai/mcp.md) over recorded sessions, as opentelemetry-proto metrics:
`mcp.client.operation.duration` and `mcp.server.operation.duration` (each answered request, on
the side that sent it and the side that handled it), `mcp.client.session.duration` and
`mcp.server.session.duration` (each session from its first to its last frame), in seconds with
the conventions' bucket boundaries. Memory grows with the distinct attribute sets, not frames."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from opentelemetry.proto.metrics.v1 import metrics_pb2

from mcptap.analysis import mcp, paired
from mcptap.report import otlp_spans

BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
OPERATION = {"client": "mcp.client.operation.duration", "server": "mcp.server.operation.duration"}
SESSION = {"client": "mcp.client.session.duration", "server": "mcp.server.session.duration"}
DESCRIPTIONS = {
    "mcp.client.operation.duration": "The duration of the MCP request or notification as observed on the sender "
                                     "from the time it was sent until the response or ack is received.",
    "mcp.server.operation.duration": "MCP request or notification duration as observed on the receiver from the "
                                     "time it was received until the result or ack is sent.",
    "mcp.client.session.duration": "The duration of the MCP session as observed on the MCP client.",
    "mcp.server.session.duration": "The duration of the MCP session as observed on the MCP server.",
}


@dataclass
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS) + 1))
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")
    start: float = float("inf")
    end: float = float("-inf")

    def add(self, seconds: float, start: float, end: float) -> None:
        self.counts[bisect.bisect_left(BOUNDS, seconds)] += 1
        self.count += 1
        self.total += seconds
        self.low, self.high = min(self.low, seconds), max(self.high, seconds)
        self.start, self.end = min(self.start, start), max(self.end, end)


class Durations:
    """The four histograms, filled operation by operation and session by session."""

    def __init__(self) -> None:
        self.points: dict[tuple[str, tuple], _Histogram] = {}

    def _add(self, name: str, attrs: dict, seconds: float, start: float, end: float) -> None:
        key = (name, tuple(sorted((k, v) for k, v in attrs.items() if v is not None)))
        self.points.setdefault(key, _Histogram()).add(max(seconds, 0.0), start, end)

    def operation(self, facts: otlp_spans.SessionFacts, op: paired.Operation) -> None:
        """An answered request, on both sides (the sender's histogram is the client one)."""
        if op.response_ts is None:
            return
        tool, prompt = paired.target(op)
        attrs = {"mcp.method.name": op.method, "error.type": otlp_spans.error_type(op), "gen_ai.tool.name": tool,
                 "gen_ai.prompt.name": prompt, "rpc.response.status_code":
                 str(op.error_code) if op.outcome == paired.ERROR and op.error_code is not None else None,
                 "gen_ai.operation.name": "execute_tool" if op.method == "tools/call" else None,
                 "mcp.protocol.version": facts.revision,
                 "network.transport": "tcp" if facts.http else "pipe"}
        sender, handler = ("client", "server") if op.direction == mcp.C2S else ("server", "client")
        for side in (sender, handler):
            self._add(OPERATION[side], attrs, op.response_ts - op.ts, op.ts, op.response_ts)

    def session(self, facts: otlp_spans.SessionFacts, first: float | None, last: float | None) -> None:
        if first is None or last is None:
            return
        attrs = {"mcp.protocol.version": facts.revision, "network.transport": "tcp" if facts.http else "pipe"}
        for side in ("client", "server"):
            self._add(SESSION[side], attrs, last - first, first, last)

    def metrics(self) -> list[metrics_pb2.Metric]:
        by_name: dict[str, metrics_pb2.Metric] = {}
        for (name, attrs), h in sorted(self.points.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
            metric = by_name.get(name)
            if metric is None:
                metric = by_name[name] = metrics_pb2.Metric(
                    name=name, unit="s", description=DESCRIPTIONS[name],
                    histogram=metrics_pb2.Histogram(
                        aggregation_temporality=metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE))
            metric.histogram.data_points.append(metrics_pb2.HistogramDataPoint(
                attributes=otlp_spans.attributes(dict(attrs)), start_time_unix_nano=int(round(h.start * 1e9)),
                time_unix_nano=int(round(h.end * 1e9)), count=h.count, sum=h.total, bucket_counts=h.counts,
                explicit_bounds=BOUNDS, min=h.low, max=h.high))
        return list(by_name.values())
