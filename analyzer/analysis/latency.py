"""Request latencies per method in bounded memory: a log-bucketed histogram (as HDR histograms
and DDSketch do) whose quantiles are within RELATIVE_ERROR of the exact value, whatever the
number of requests. Used for the report's service response time table."""

from __future__ import annotations

import math

RELATIVE_ERROR = 0.01
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
LOG_GAMMA = math.log(_GAMMA)
MIN_SECONDS = 1e-6  # latencies below a microsecond (or negative, on a skewed clock) count as this
_isfinite, _ceil, _log = math.isfinite, math.ceil, math.log


class LatencySketch:
    __slots__ = ("buckets", "count", "max")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.max: float | None = None

    def add(self, seconds: float) -> None:
        if not _isfinite(seconds):  # a log's impossible times: no latency to count
            return
        key = _ceil(_log(seconds if seconds > MIN_SECONDS else MIN_SECONDS) / LOG_GAMMA)
        buckets = self.buckets
        buckets[key] = buckets.get(key, 0) + 1
        self.count += 1
        if self.max is None or seconds > self.max:
            self.max = seconds

    def merge(self, other: "LatencySketch") -> None:
        for key, n in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0) + n
        self.count += other.count
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0..1), within RELATIVE_ERROR; None when empty."""
        if not self.count:
            return None
        rank = q * (self.count - 1)
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen > rank:
                estimate = 2 * _GAMMA ** key / (_GAMMA + 1)
                return min(estimate, self.max) if self.max is not None else estimate
        return self.max
