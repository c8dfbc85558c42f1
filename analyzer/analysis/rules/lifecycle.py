"""Lifecycle rules (docs/findings.md "MCP lifecycle and methods"; docs/mcp-reference.md
sections 1 and 4): the initialize handshake of 2024-11-05 to 2025-11-25, and whether a session's
revision could be established at all."""

from __future__ import annotations

from mcptap.analysis.mcp import C2S, KNOWN_REVISIONS, S2C, allowed_downgrade
from mcptap.analysis.rules.registry import Hit, rule

LIFECYCLE = "MCP basic/lifecycle §Initialization"


@rule("revision-unknown", group="lifecycle", severity="info", on=[],
      ref="docs/findings.md §3: unknown is not wrong; judged by base JSON-RPC plus --revision",
      summary="the session's MCP revision could not be established (capture began mid-session)")
def revision_unknown(*_):  # raised once per session by the session core
    return None


@rule("initialize-not-first", group="lifecycle", severity="error", on=["request"], layer="mcp",
      ref=f'{LIFECYCLE}: "The initialization phase MUST be the first interaction between client and server."',
      summary="a handshake-era session whose first client request is not initialize",
      when=['early'])
def initialize_not_first(msg, s):
    if s.handshake and msg.direction == C2S and s.client_requests == 0 and msg.method != "initialize" and not msg.probe:
        return Hit(f"the client's first request is {msg.method}, not initialize")


@rule("request-before-initialize", group="lifecycle", severity="warning", on=["request"], layer="mcp",
      ref=f'{LIFECYCLE}: "The client SHOULD NOT send requests other than pings before the server has responded '
          'to the initialize request." / "The server SHOULD NOT send requests other than pings and logging '
          'before receiving the initialized notification."',
      summary="a request other than ping before the handshake allows it",
      when=['early'])
def request_before_initialize(msg, s):
    if not s.handshake or msg.method == "ping" or msg.probe or (msg.method == "initialize" and s.init_request is None):
        return None
    if msg.direction == C2S and s.client_requests > 0 and s.init_result_seq is None:
        return Hit(f"{msg.method} sent before the server answered initialize")
    if msg.direction == S2C and s.initialized_seq is None:
        return Hit(f"the server sent {msg.method} before the client's notifications/initialized")


@rule("initialized-missing", group="lifecycle", severity="error", on=["request"], layer="mcp",
      ref=f'{LIFECYCLE}: "After successful initialization, the client MUST send an initialized notification"',
      summary="the client sent requests after InitializeResult without notifications/initialized first",
      when=['early'])
def initialized_missing(msg, s):
    if (s.handshake and msg.direction == C2S and msg.method != "ping" and s.init_result_seq is not None
            and s.initialized_seq is None and s.first("initialized-missing")):
        return Hit(f"{msg.method} sent after the InitializeResult (frame {s.init_result_seq}) without "
                   "notifications/initialized first", related=s.init_result_seq)


@rule("protocol-version-unsupported", group="lifecycle", severity="warning", on=["response", "request", "notification"],
      ref='MCP basic/lifecycle §Version Negotiation: "If the client does not support the version in the server\'s '
          'response, it SHOULD disconnect." (a server answering an older revision it supports is what the '
          'lifecycle allows: "Otherwise, the server MUST respond with another protocol version it supports")',
      summary="the negotiated protocolVersion is not a known revision, or the server answered a version the "
              "client did not ask for (and not an older known one) and the session went on",
      when=['init-response', 'version-mismatch'])
def protocol_version_unsupported(msg, s):
    if msg.kind == "response" and msg.request is not None and msg.request.method == "initialize" and msg.direction == S2C:
        result = msg.value.get("result")
        version = result.get("protocolVersion") if type(result) is dict else None
        if version not in KNOWN_REVISIONS:
            s.first("version-went-on")  # one finding says it: not also "the client went on"
            return Hit(f"the server answered protocolVersion {version!r}, which is not a known MCP revision")
        return None
    if (msg.direction == C2S and s.init_result_seq is not None and msg.seq > s.init_result_seq
            and s.server_version != s.init_requested_version
            and not allowed_downgrade(s.init_requested_version, s.server_version) and s.first("version-went-on")):
        return Hit(f"the client asked for {s.init_requested_version!r}, the server answered {s.server_version!r} "
                   f"(frame {s.init_result_seq}), and the client went on", related=s.init_result_seq)


@rule("initialize-cancelled", group="lifecycle", severity="error", on=["notification"],
      ref='MCP basic/utilities/cancellation: "The initialize request MUST NOT be cancelled by clients"',
      summary="notifications/cancelled targets the initialize request (at any time: before or after its answer)",
      when=['cancel:initialize'])
def initialize_cancelled(msg, s):
    if msg.fact == "cancel:initialize":
        return Hit(f"cancels the initialize request at frame {msg.related}", related=msg.related)
