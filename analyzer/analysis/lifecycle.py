"""The lifecycle in the session core: the facts about a request's or notification's method (its
verdict in the revision's tables, the handshake's phase, a capability gate), worked out once and
kept until the lifecycle changes (`_quiet_method`, `_lifecycle_changed`), and once-only findings
(`first`, `hit_once`)."""

from __future__ import annotations

from mcptap.analysis import mcp, rules
from mcptap.analysis.rules import Hit

C2S, S2C = mcp.C2S, mcp.S2C
DISCOVER = "server/discover"
DEPRECATED = mcp.DEPRECATED


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
        feature = mcp.deprecated_method(self.revision, direction, method)
        if feature is not None and DEPRECATED + feature not in self.once:
            facts.append("deprecated")
        if self.handshake:
            if self.init_result_seq is None or self.initialized_seq is None:
                facts.append("early")
            elif (direction == C2S and self.server_version != self.init_requested_version
                  and "version-went-on" not in self.once
                  and not mcp.allowed_downgrade(self.init_requested_version, self.server_version)):
                facts.append("version-mismatch")
            if method in mcp.CAPABILITY_GATES and not self._gate_open(method):
                facts.append("gated")

    def _stateless_request(self, msg, facts: list[str]) -> None:
        """2026-07-28: a client request's facts from its per-request _meta (what it lacks; a log level,
        the deprecated Logging, until reported)."""
        meta = msg.meta()
        if mcp.missing_meta(meta):
            facts.append("meta-missing")
        if mcp.META_LOG_LEVEL in meta and DEPRECATED + "Logging" not in self.once and "deprecated" not in facts:
            facts.append("deprecated")

    def _stateless_answer(self, msg, req, facts: list[str]) -> None:
        """2026-07-28: a result's facts (its resultType; the deprecated features its inputRequests
        ask for), and a server/discover result's capabilities, which are the server's."""
        value = msg.value.get("result")
        result_type = value.get("resultType", mcp.ABSENT) if type(value) is dict else mcp.ABSENT
        if mcp.bad_result_type(result_type):
            facts.append("result-type")
        elif result_type == "input_required" and self.deprecated_uses(msg):
            facts.append("deprecated")
        if req is not None and req.method == DISCOVER and type(value) is dict \
                and type(value.get("capabilities")) is dict:
            self.server_caps = value["capabilities"]
            self._lifecycle_changed()

    def deprecated_uses(self, msg) -> list[str]:
        """The deprecated features (mcp.DEPRECATED_FEATURES) this message uses that the session has
        not reported yet: its method, a request's _meta logLevel (2026-07-28), an input_required
        result's `inputRequests` entries."""
        found = []
        feature = mcp.deprecated_method(self.revision, msg.direction, msg.method) if msg.method else None
        if feature is not None:
            found.append(feature)
        if msg.kind == "request" and self.stateless and mcp.META_LOG_LEVEL in msg.meta():
            found.append("Logging")
        elif msg.kind == "response" and self.stateless:
            found.extend(mcp.deprecated_inputs(self.revision, msg.value.get("result")))
        return [f for f in dict.fromkeys(found) if DEPRECATED + f not in self.once]

    def extension_missing(self, extension: str, msg) -> str | None:
        """Which side did not declare `extension` for this message ("client" or "server"), None when
        both did or what was not seen cannot tell: a client's request its own `_meta` capabilities
        (2026-07-28) or initialize's, a server's notification any client request of the session; the
        server's server/discover or initialize capabilities, when the recording holds them."""
        if self.stateless:
            declared = (extension in mcp.extensions_declared(msg.meta().get(mcp.META_CLIENT_CAPABILITIES))
                        if msg.direction == C2S else extension in self.client_extensions)
        else:
            declared = self.client_caps is None or extension in mcp.extensions_declared(self.client_caps)
        if not declared:
            return "client"
        if self.server_caps is not None and extension not in mcp.extensions_declared(self.server_caps):
            return "server"
        return None

    def vendor_extensions(self) -> list[str]:
        """The extensions mcptap does not know that both sides declared (the server's side only
        when its capabilities were seen)."""
        client = self.client_extensions if self.stateless else set(mcp.extensions_declared(self.client_caps))
        server = None if self.server_caps is None else mcp.extensions_declared(self.server_caps)
        return sorted(e for e in client if e not in mcp.KNOWN_EXTENSIONS and (server is None or e in server))

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
