"""Method rules: which methods a revision defines, in which direction, as which kind, behind
which capability (docs/mcp-reference.md sections 5 and 10; tables in analyzer/analysis/mcp.py)."""

from __future__ import annotations

from mcptap.analysis import mcp
from mcptap.analysis.rules.registry import Hit, rule

METHODS = "MCP T/<rev> ClientRequest, ServerRequest, ClientNotification, ServerNotification (via mcp-types)"
_DIRECTION_NAMES = {mcp.C2S: "client to server", mcp.S2C: "server to client"}


def _verdict(msg, s) -> str | None:
    if msg.probe:  # a dual-era client's 2026-07-28 probe before initialize: judged as what it is
        return mcp.method_verdict("2026-07-28", msg.direction, msg.method, True)
    return mcp.method_verdict(s.revision, msg.direction, msg.method, msg.kind == "request")


@rule("unknown-method", group="methods", severity="warning", on=["request", "notification"], layer="mcp",
      ref=METHODS, summary="a method the negotiated revision does not define (and not namespaced as an extension)",
      when=['unknown-method'])
def unknown_method(msg, s):
    if _verdict(msg, s) == "unknown-method":
        vendor = s.vendor_extensions()
        if vendor:  # a negotiated extension mcptap does not know may define it: unknown, not wrong
            return Hit(f"{msg.method} is not a method of MCP {s.revision}; the session negotiated the extension"
                       f"{'s' if len(vendor) > 1 else ''} {', '.join(vendor)}, which may define it", severity="info")
        return Hit(f"{msg.method} is not a method of MCP {s.revision}")


@rule("wrong-direction", group="methods", severity="error", on=["request", "notification"], layer="mcp",
      ref=f"{METHODS}; 2026-07-28 basic/transports: servers MUST NOT send requests",
      summary="a method sent in a direction the revision does not allow",
      when=['wrong-direction'])
def wrong_direction(msg, s):
    if _verdict(msg, s) == "wrong-direction":
        if msg.kind == "request" and msg.direction == mcp.S2C and s.stateless:
            return Hit(f"the server sent a request ({msg.method}); in {s.revision} servers MUST NOT send requests")
        return Hit(f"{msg.method} is not sent {_DIRECTION_NAMES[msg.direction]} in MCP {s.revision}")


@rule("notification-as-request", group="methods", severity="error", on=["request"], layer="mcp",
      ref=f'{METHODS}; MCP basic §Notifications: "Notifications MUST NOT include an ID."',
      summary="a notification method sent with an id",
      when=['notification-as-request'])
def notification_as_request(msg, s):
    if _verdict(msg, s) == "notification-as-request":
        return Hit(f"{msg.method} is a notification but was sent with an id")


@rule("request-as-notification", group="methods", severity="error", on=["notification"], layer="mcp",
      ref=f"{METHODS}; MCP basic §Requests: requests MUST include an id",
      summary="a request method sent without an id",
      when=['request-as-notification'])
def request_as_notification(msg, s):
    if _verdict(msg, s) == "request-as-notification":
        return Hit(f"{msg.method} is a request but was sent without an id (it cannot be answered)")


@rule("capability-not-negotiated", group="methods", severity="warning", on=["request", "notification"], layer="mcp",
      ref='MCP basic/lifecycle §Operation: "Only use capabilities that were successfully negotiated"; '
          "2026-07-28: log notifications answer a request that set _meta logLevel",
      summary="a method used though the capability that gates it was not declared",
      when=['gated'])
def capability_not_negotiated(msg, s):
    if s.stateless:
        if msg.method == "notifications/message" and msg.direction == mcp.S2C and not any(
                r.log_level for r in s.outstanding.values() if r.direction == mcp.C2S):
            return Hit("a log notification, but no request in progress set _meta "
                       f"{mcp.META_LOG_LEVEL!r}")
        return None
    missing = mcp.gate_missing(msg.method, s.revision, s.server_caps, s.client_caps)
    if missing is not None:
        side, path = missing
        return Hit(f"{msg.method} needs the {side} capability {'.'.join(path)}, which the {side} did not declare "
                   "at initialize")


@rule("modern-meta-missing", group="methods", severity="error", on=["request"], layer="mcp",
      ref="MCP 2026-07-28 basic §_meta: every request carries io.modelcontextprotocol/protocolVersion and "
          "io.modelcontextprotocol/clientCapabilities",
      summary="2026-07-28: a request lacks the required per-request _meta protocol fields",
      when=['meta-missing'])
def modern_meta_missing(msg, s):
    if s.stateless and msg.direction == mcp.C2S:
        missing = mcp.missing_meta(msg.meta())
        if missing:
            return Hit(f"{msg.method} lacks params._meta {', '.join(missing)}")


@rule("result-type-invalid", group="methods", severity="error", on=["response"], layer="mcp",
      ref='MCP 2026-07-28 basic §ResultType: "resultType" is "complete" or "input_required"; an unknown value '
          'MUST be treated as invalid; ext-tasks adds "task", valid where the request negotiated io.modelcontextprotocol/tasks',
      summary="2026-07-28: a result's resultType is present but not a known value",
      when=['result-type'])
def result_type_invalid(msg, s):
    if s.stateless and msg.kind == "response":
        result = msg.value.get("result")
        if type(result) is dict and mcp.bad_result_type(result.get("resultType", mcp.ABSENT)):
            value = result["resultType"]
            extension = mcp.EXTENSION_RESULT_TYPES.get(value) if type(value) is str else None
            if extension is None:
                return Hit(f"resultType {value!r} is not one of {sorted(mcp.RESULT_TYPES)}")
            req = msg.request
            side = s.extension_missing(extension, req) if req is not None else "client"
            if side is not None:
                return Hit(f"resultType {value!r} belongs to the extension {extension}, which the {side} did not "
                           "declare for this request")
