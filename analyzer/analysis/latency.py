"""Request latencies per method in bounded memory, and the one percentile definition of every face
(`mcptap analyze`'s table and JSON, mcptap.data.latency, the HTML report and the viewer): the
nearest rank, the smallest value that at least q of the values are at or below (the value at
rank ceil(q * n) of the n sorted, the first for q = 0). A sketch keeps every value up to EXACT
of them (its percentiles exact), past that a log-bucketed histogram (as HDR histograms and
DDSketch do) whose percentiles are within RELATIVE_ERROR of the exact value."""

from __future__ import annotations

import math

RELATIVE_ERROR = 0.01
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
LOG_GAMMA = math.log(_GAMMA)
MIN_SECONDS = 1e-6  # latencies below a microsecond (or negative, on a skewed clock) count as this
EXACT = 4096
"""Values a sketch keeps exactly before it turns to buckets."""
_isfinite, _ceil, _log = math.isfinite, math.ceil, math.log


def rank(q: float, n: int) -> int:
    """The 1-based nearest rank of the q-quantile (0..1) among n values."""
    return min(n, max(1, _ceil(q * n - 1e-9)))


def nearest_rank(values, q: float) -> float | None:
    """The q-quantile of these values by nearest rank (module docstring); None when empty."""
    ordered = sorted(v for v in values if v is not None and _isfinite(v))
    return ordered[rank(q, len(ordered)) - 1] if ordered else None


class LatencySketch:
    __slots__ = ("buckets", "count", "max", "exact")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.exact: list[float] | None = []  # every value while there are at most EXACT
        self.count = 0
        self.max: float | None = None

    def add(self, seconds: float) -> None:
        if not _isfinite(seconds):  # a log's impossible times: no latency to count
            return
        if self.exact is not None:
            self.exact.append(seconds)
            if len(self.exact) > EXACT:
                self.exact = None
        key = _ceil(_log(seconds if seconds > MIN_SECONDS else MIN_SECONDS) / LOG_GAMMA)
        buckets = self.buckets
        buckets[key] = buckets.get(key, 0) + 1
        self.count += 1
        if self.max is None or seconds > self.max:
            self.max = seconds

    def merge(self, other: "LatencySketch") -> None:
        if self.exact is not None and other.exact is not None and len(self.exact) + len(other.exact) <= EXACT:
            self.exact.extend(other.exact)
        else:
            self.exact = None
        for key, n in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0) + n
        self.count += other.count
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0..1) by nearest rank: exact up to EXACT values, else within
        RELATIVE_ERROR; None when empty."""
        if not self.count:
            return None
        if self.exact is not None:
            return nearest_rank(self.exact, q)
        wanted = rank(q, self.count)
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= wanted:
                estimate = 2 * _GAMMA ** key / (_GAMMA + 1)
                return min(estimate, self.max) if self.max is not None else estimate
        return self.max
