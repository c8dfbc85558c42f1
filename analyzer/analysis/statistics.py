"""Service response time per method (Wireshark's SRT) in the session core: calls, errors,
unanswered requests and a latency sketch per method, and the session's summary."""

from __future__ import annotations

from mcptap.analysis.latency import LatencySketch
from mcptap.wire.textsafe import storable

_STORABLE: dict[str, str] = {}


def _storable(text: str) -> str:
    """Text SQLite can store: lone surrogates (legal in JSON escapes) are written escaped."""
    known = _STORABLE.get(text)
    if known is not None:
        return known
    if len(_STORABLE) < 10_000:
        known = _STORABLE[text] = _storable_uncached(text)
        return known
    return _storable_uncached(text)



_storable_uncached = storable


class Statistics:
    """SessionAnalysis's statistics part (`method_stats`, `_by_method`: set up in its __init__)."""

    def _stats(self, method: str | None) -> dict:
        return (self._by_method.get(method) or self._method_record(method))[1]

    def _method_record(self, method: str | None) -> tuple[str | None, dict]:
        """A method as written: its storable name (lone surrogates escaped: it is printed and
        stored) and its service response time record in `method_stats` (remembered in
        `_by_method` for the next time)."""
        name = _storable(method) if method is not None else None
        stats = self.method_stats.get(name)
        if stats is None:
            stats = self.method_stats[name] = {"calls": 0, "errors": 0, "unanswered": 0, "latencies": LatencySketch()}
        known = (name, stats)
        if len(self._by_method) < 10_000:
            self._by_method[method] = known
        return known

    def summary(self) -> dict:
        return {"id": self.session_id, "revision": self.revision or self.declared_revision,
                "revision_source": self.revision_source, "frames": self.frames, "kinds": dict(self.kinds),
                "findings": dict(self.severities)}
