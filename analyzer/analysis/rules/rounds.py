"""What a 2026-07-28 server does with a round of input (MCP 2026-07-28 basic/patterns/mrtr, basic/index
§Request Metadata; docs/findings.md "Operations"): an input_required result that asks for input the
request's `_meta` did not declare the client able to give, and a retry whose requestState the client
altered that the server completed anyway. Each check gets one `Step` (analyzer/analysis/logical_operations.py)."""

from __future__ import annotations

from mcptap.analysis import mcp, paired
from mcptap.analysis.rules.registry import Hit, rule

MRTR = "MCP 2026-07-28 basic/patterns/mrtr"
NEEDS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
"""The input requests an input_required result may carry, and the client capability each needs."""


def _result(op) -> dict | None:
    r = op.response.get("result") if isinstance(op.response, dict) else None
    return r if isinstance(r, dict) else None


def _undeclared(ask: dict, caps: dict) -> str | None:
    """The capability an input request needs that `caps` lacks (elicitation in url mode: `elicitation.url`)."""
    need = NEEDS.get(ask.get("method"))
    if need is None:
        return None
    if need not in caps:
        return need
    params = ask.get("params")
    if need == "elicitation" and isinstance(params, dict) and params.get("mode") == "url":
        modes = caps.get("elicitation")
        if not (isinstance(modes, dict) and "url" in modes):
            return "elicitation.url"
    return None


@rule("input-request-undeclared", group="operations", severity="error", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Server Requirements: "Servers MUST NOT send an inputRequests that the client has not declared '
          'support for in its capabilities"; basic/index §Request Metadata: "If processing a request requires a '
          'capability the client did not include in io.modelcontextprotocol/clientCapabilities, the server MUST '
          'return a MissingRequiredClientCapabilityError (-32021) ... On HTTP, the response status MUST be 400 Bad '
          'Request."',
      summary="an input_required result asks for input (elicitation, sampling, roots) the request's _meta "
              "clientCapabilities did not declare, instead of error -32021")
def input_request_undeclared(step):
    result = _result(step.op) if step.kind in ("answer", "retry") else None
    if result is None or result.get("resultType") != "input_required":
        return None
    asks = result.get("inputRequests")
    caps = step.op.meta.get(mcp.META_CLIENT_CAPABILITIES)
    if not isinstance(asks, dict) or not isinstance(caps, dict):
        return None
    missing = sorted({m for ask in asks.values() if isinstance(ask, dict) for m in [_undeclared(ask, caps)] if m})
    if not missing:
        return None
    return Hit(f"{step.op.method} answered input_required asking for {', '.join(missing)}, which the request's _meta "
               "clientCapabilities did not declare: the server must refuse it with -32021 "
               "(MissingRequiredClientCapability)", seq=step.op.response_seq, related=step.op.seq)


@rule("request-state-altered-accepted", group="operations", severity="warning", on=["operation"], layer="mcp",
      ref=f'{MRTR} §Server Requirements: "If a client request contains a requestState field, servers MUST treat '
          'requestState as an attacker-controlled input. If requestState influences authorization, resource access, '
          'or business logic, servers MUST protect its integrity (e.g. HMAC or AEAD) and MUST reject state that fails '
          'verification. Integrity protection MAY be omitted only when tampering can cause nothing worse than request '
          'failure." (a warning: the wire cannot show what the state protects)',
      summary="a server completed a retry whose requestState the client altered (request-state-altered), instead of "
              "rejecting it")
def request_state_altered_accepted(step):
    if (step.kind != "retry" or not isinstance(step.issued, str) or not isinstance(step.sent, str)
            or step.sent == step.issued or step.op.outcome != paired.OK):
        return None
    result = _result(step.op)
    if result is None or result.get("resultType", "complete") != "complete":
        return None
    return Hit(f"{step.op.method} retried with an altered requestState (issued at frame {step.before.response_seq}) "
               "was completed: a server must verify the state it issued and reject one that fails",
               seq=step.op.response_seq, related=step.before.response_seq)
