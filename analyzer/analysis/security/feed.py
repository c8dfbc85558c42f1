"""The security reading (analyzer/analysis/security/reading.py) fed from the session core's own pass
(analyzer/analysis/session.py), a mixin of SessionAnalysis: each frame whose messages the reading
needs (a message of `reading.METHODS`, or a response to one) handed over as the core read it, its
parse shared (no second read of the store, no second parse), with the `redacted` paths the store
keeps with it. The findings join the core's at `end`."""

from __future__ import annotations

from typing import Any

import orjson

from mcptap.analysis.messages import UNREAD
from mcptap.analysis.security.reading import METHODS, Reading

TOOL_CALL = "tools/call"


class SecurityFeed:
    """The part of SessionAnalysis that feeds the security reading (`security=True`)."""

    _reading: Reading | None = None
    _recorded: str | None = None  # the `redacted` paths of the frame being read (JSON text), or None

    def _security(self, session_id: str, policy) -> None:
        """The reading of this session, when a security rule is let through by the policy."""
        reading = Reading(session_id, policy, (getattr(policy, "catalogue", None) or {}).get(session_id))
        self._reading = reading if reading.active else None

    @property
    def reads_security(self) -> bool:
        """Whether the security rules judge this session in the pass (then each frame's `redacted`
        paths are wanted with it: `feed` takes rows of five)."""
        return self._reading is not None

    def _secure(self, seq: int, ts: float, direction: str, raw: str | bytes, rows: list, value: Any = UNREAD) -> None:
        """A frame the exact path read, and its messages' rows (a response's names its request's
        method once paired): read when one is of the reading's methods (a tools/call answer only
        where it may carry a secret). `value`: the frame as orjson reads it, when known."""
        into = answer = False
        for _sid, _seq, _idx, _direction, kind, _id, method, _paired, _latency in rows:
            if method in METHODS:
                if method == TOOL_CALL and kind != "request":
                    answer = True
                else:
                    into = True
        if not (into or answer):
            return
        reading, recorded = self._reading, self._recorded
        raw = raw if type(raw) is bytes else raw.encode()
        if (into or reading.answer_wanted(raw, recorded)) and reading.wants(direction, raw, recorded):
            reading.read(seq, ts, direction, raw, recorded, value)

    def _secure_fast(self, seq: int, ts: float, direction: str, raw: bytes, answer: bool, value: Any = None) -> Any:
        """A message the fast path took, of the reading's methods (`answer`: a tools/call answer):
        read, parsed here unless `value` holds its parse already; returns the parse (for the
        schema check: not parsed again) or `value`."""
        reading, recorded = self._reading, self._recorded
        if (answer and not reading.answer_wanted(raw, recorded)) or not reading.wants(direction, raw, recorded):
            return value
        if value is None:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:  # past what orjson reads: the reading's own exact parse
                reading.read(seq, ts, direction, raw, recorded)
                return None
        reading.read(seq, ts, direction, raw, recorded, value)
        return value

    def _secured(self) -> list:
        """The reading's findings, at the session's end (counted in its severities)."""
        found = self._reading.end()
        for finding in found:
            self.severities[finding.severity] += 1
        return found
