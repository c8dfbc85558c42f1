"""What each message the session core read tells the rules (`Observations._observe`, a mixin of
SessionAnalysis, analyzer/analysis/session.py): its pairing, lifecycle and gating facts, the
rules of its event and facts run, and the lifecycle moved on (initialize, initialized, the
initialize answer)."""

from __future__ import annotations

from mcptap.analysis import mcp
from mcptap.analysis.classify import ERROR, INVALID, NOTIFICATION, REQUEST, RESPONSE, VALID_ID
from mcptap.analysis.messages import Msg

C2S, S2C = mcp.C2S, mcp.S2C


class Observations:
    """The part of SessionAnalysis that judges a message once it is read."""

    def _observe(self, msg: Msg) -> None:
        kind = msg.kind
        facts: list[str] = []
        if kind == REQUEST:
            self._request(msg)
            event = "request"
            if msg.pairing != "new":
                facts.append(msg.pairing)
            self._method_facts(msg.method, msg.direction, msg.probe, True, facts)
            if self._log_unasked(msg.method, msg.direction):
                facts.append("gated")
            if self.stateless and msg.direction == C2S:
                self._stateless_request(msg, facts)
        elif kind == NOTIFICATION:
            self._notification(msg)
            event = "notification"
            if msg.fact is not None:
                facts.append(msg.fact)
            self._method_facts(msg.method, msg.direction, msg.probe, False, facts)
            if self._log_unasked(msg.method, msg.direction):
                facts.append("gated")
        elif kind in (RESPONSE, ERROR) or (kind == INVALID and msg.sig.method == "absent" and msg.sig.id in VALID_ID):
            self._response(msg)  # a malformed response with a readable id still answers its request
            event = "response"
            if msg.pairing != "matched":
                facts.append(msg.pairing)
            req = msg.request
            if req is not None:
                if req.cancelled is not None and req.cancelled < msg.seq:
                    facts.append("after-cancel")
                if req is self.init_request:
                    facts.append("init-response")
            if self.stateless and kind == RESPONSE:
                self._stateless_answer(msg, req, facts)
            if kind == ERROR and req is not None and req.method == "tools/call":
                facts.append("tool-call-error")
        else:
            return
        if facts:
            for rule in self._dispatch.rules(event, tuple(facts)):
                hit = rule.check(msg, self)
                if hit is not None:
                    self.add(rule, hit, msg.seq, msg.idx)
        if msg.method == "initialize" and kind == REQUEST and msg.direction == C2S and self.init_request is None:
            params = msg.params if type(msg.params) is dict else {}
            self.init_request = msg.request
            self.init_requested_version = params.get("protocolVersion")
            self.client_caps = params.get("capabilities")
            self._lifecycle_changed()
        elif kind == NOTIFICATION and msg.method == "notifications/initialized" and msg.direction == C2S:
            if self.initialized_seq is None:
                self.initialized_seq = msg.seq
                self._lifecycle_changed()
        elif (kind == RESPONSE and msg.direction == S2C and msg.request is not None
              and msg.request is self.init_request and self.init_result_seq is None):
            result = msg.value.get("result")
            result = result if type(result) is dict else {}
            self.init_result_seq = msg.seq
            self.init_result_ts = msg.ts
            self.server_version = result.get("protocolVersion")
            self.server_caps = result.get("capabilities")
            self._lifecycle_changed()
        if msg.direction == C2S and kind == REQUEST and not msg.probe:
            self.client_requests += 1
