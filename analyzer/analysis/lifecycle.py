"""The lifecycle in the session core: the facts about a request's or notification's method (its
verdict in the revision's tables, the handshake's phase, a capability gate), worked out once and
kept until the lifecycle changes (`_quiet_method`, `_lifecycle_changed`), and once-only findings
(`first`, `hit_once`)."""

from __future__ import annotations

from mcptap.analysis import mcp, rules
from mcptap.analysis.rules import Hit

C2S, S2C = mcp.C2S, mcp.S2C


class Lifecycle:
    """SessionAnalysis's lifecycle part (its state is set up in SessionAnalysis.__init__)."""

    def first(self, what: str) -> bool:
        """True the first time a rule asks about `what` in this session (for once-only findings)."""
        if what in self.once:
            return False
        self.once.add(what)
        self._lifecycle_changed()
        return True

    def hit_once(self, code: str, seq: int | None, hit: Hit) -> None:
        if code not in self.once:
            self.once.add(code)
            self._lifecycle_changed()
            self.add(rules.RULES[code], hit, seq, None)

    def _lifecycle_changed(self) -> None:
        """What the methods' rules look at changed (the handshake's progress, the capabilities,
        a once-only finding given): the quiet methods are worked out again."""
        self._quiet.clear()
        self._gates = {}

    def _quiet_method(self, method: str, direction: str, is_request: bool) -> bool:
        """No rule looks at this method sent this way as this kind, as things stand (kept until
        `_lifecycle_changed`: the handshake's progress, the capabilities, a once-only finding)."""
        facts: list[str] = []
        self._method_facts(method, direction, False, is_request, facts)
        quiet = self._quiet[(method, direction, is_request)] = not (
            facts and self._dispatch.rules("request" if is_request else "notification", tuple(facts)))
        return quiet

    def _method_facts(self, method: str, direction: str, probe: bool, is_request: bool, facts: list[str]) -> None:
        """Facts about a request's or notification's method, for the MCP layer's rules. A fact is
        added only where its rules could find something."""
        if self.revision is None:
            return
        verdict = mcp.method_verdict("2026-07-28" if probe else self.revision, direction, method, is_request)
        if verdict is not None:
            facts.append(verdict)
        if self.handshake:
            if self.init_result_seq is None or self.initialized_seq is None:
                facts.append("early")
            elif (direction == C2S and self.server_version != self.init_requested_version
                  and "version-went-on" not in self.once
                  and not mcp.allowed_downgrade(self.init_requested_version, self.server_version)):
                facts.append("version-mismatch")
            if method in mcp.CAPABILITY_GATES and not self._gate_open(method):
                facts.append("gated")

    def _log_unasked(self, method: str, direction: str) -> bool:
        """2026-07-28: a log notification from the server while no request in progress set _meta
        logLevel (capability-not-negotiated looks at it)."""
        return (self.stateless and method == "notifications/message" and direction == S2C
                and not any(r.log_level for r in self.outstanding.values() if r.direction == C2S))

    def _gate_open(self, method: str) -> bool:
        """No capability the method needs can be missing (known until the capabilities change)."""
        open_ = self._gates.get(method)
        if open_ is None:
            open_ = self._gates[method] = mcp.gate_missing(method, self.revision, self.server_caps,
                                                           self.client_caps) is None
        return open_
