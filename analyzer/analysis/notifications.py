"""Cancellation and progress in the session core: a notifications/cancelled names a request
(`_notification`), a notifications/progress a token whose value must increase (`_progress`,
`_progressed`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from mcptap.analysis import mcp
from mcptap.analysis.messages import _MISSING, Msg, id_key
from mcptap.wire.jsonwire import NumberText

OTHER = mcp.OTHER


class Notifications:
    """SessionAnalysis's part for cancellation and progress (its state, `tokens` and
    `done_tokens`, is set up in SessionAnalysis.__init__)."""

    def _notification(self, msg: Msg) -> None:
        params = msg.params if type(msg.params) is dict else {}
        if msg.method == "notifications/cancelled":
            target = params.get("requestId", _MISSING)
            if target is _MISSING:
                msg.fact = "cancel:no-request-id"
                return
            key = (msg.direction, id_key(target))
            req = self.outstanding.get(key)
            init = self.init_request
            if init is not None and (req is init or (req is None and key == (init.direction, id_key(init.id)))):
                # the initialize request MUST NOT be cancelled, at any time
                msg.fact, msg.request, msg.related = "cancel:initialize", init, init.seq
                if req is init and init.cancelled is None:
                    init.cancelled = msg.seq
            elif req is not None:
                msg.fact, msg.request, msg.related = "cancel:ok", req, req.seq
                if req.cancelled is None:
                    req.cancelled = msg.seq
            elif key in self.answered:
                msg.fact, msg.related = "cancel:answered", self.answered[key][1]
            elif (OTHER[msg.direction], id_key(target)) in self.outstanding or (OTHER[msg.direction], id_key(target)) in self.answered:
                msg.fact = "cancel:other-side"
            else:
                msg.fact = "cancel:unknown"
        elif msg.method == "notifications/progress":
            progress = self._progress(msg.direction, params)
            msg.fact, msg.request, msg.related = progress[:3]
            _progressed(progress)

    def _progress(self, direction: str, params: dict) -> tuple:
        """(fact, request, related frame, token entry, value) of a progress notification sent
        `direction`; the token's last value changes only with `_progressed`."""
        token = params.get("progressToken", _MISSING)
        if token is _MISSING:
            return "progress:no-token", None, None, None, None
        key = (OTHER[direction], id_key(token))
        entry = self.tokens.get(key)
        if entry is None:
            done = self.done_tokens.get(key)
            fact = "progress:after-completion" if done is not None else "progress:unknown"
            return fact, None, done, None, None
        req, last = entry
        value = _number(params.get("progress"))
        fact = "progress:not-increasing" if value is not None and last is not None and value <= last else "progress:ok"
        return fact, req, req.seq, entry, value


def _progressed(progress: tuple) -> None:
    entry, value = progress[3], progress[4]
    if value is not None:
        entry[1] = value if entry[1] is None else max(value, entry[1])


def _number(value: Any) -> int | float | Decimal | None:
    """A progress value, exact and comparable whatever its size (`1e400`, 400 digits): an int or
    float as parsed, a number kept as written as its Decimal."""
    if type(value) is int or type(value) is float:
        return value
    if type(value) is NumberText:
        return value.exact
    return None
