"""Service response time per method (Wireshark's SRT) in the session core: calls, errors,
tool errors (a tools/call result with `isError: true`: an answer, yet the call failed), unanswered
requests and a latency sketch per method, and the session's summary."""

from __future__ import annotations

import orjson

from mcptap.analysis.latency import LatencySketch
from mcptap.analysis.literal import contains
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

TOOL_CALL = "tools/call"


def tool_error(method: str | None, answer) -> bool:
    """Whether an answer (a response's value, as the exact parser gives it) to a request of
    `method` is a tool's error: a tools/call result with `isError: true` (MCP, CallToolResult)."""
    if method != TOOL_CALL or type(answer) is not dict:
        return False
    result = answer.get("result")
    return type(result) is dict and result.get("isError") is True


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
            stats = self.method_stats[name] = {"calls": 0, "errors": 0, "tool_errors": 0, "unanswered": 0,
                                               "latencies": LatencySketch()}
        known = (name, stats)
        if len(self._by_method) < 10_000:
            self._by_method[method] = known
        return known

    def summary(self) -> dict:
        return {"id": self.session_id, "revision": self.revision or self.declared_revision,
                "revision_source": self.revision_source, "frames": self.frames, "kinds": dict(self.kinds),
                "findings": dict(self.severities)}


_TOOL_ERROR = (b"isError", b"\\u")


def may_be_tool_error(raw: str | bytes) -> bool:
    """Whether a tools/call answer may say `isError` (the exact path then reads it): the name
    written as it is, or any escape that could spell it."""
    if raw.__class__ is bytes:
        return contains(raw, _TOOL_ERROR)
    return "isError" in raw or "\\u" in raw


def read_answer(raw: str | bytes):
    """A tools/call answer as orjson reads it where it `may_be_tool_error` (for `tool_error` and
    its schema check, read once), else None; False where orjson cannot read it (a number past 64
    bits: the exact parser's)."""
    if not may_be_tool_error(raw):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
