"""Rules on tool calls (MCP server/tools): how a tool's failure reaches the client."""

from __future__ import annotations

import re

from mcptap.analysis.rules.registry import Hit, rule

INTERNAL_ERROR = -32603
_PROTOCOL_TROUBLE = re.compile(r"unknown tool|tool\b.*\bnot found|no such tool|invalid (?:params|arguments|request)|"
                               r"method not found|-3260[0-2]", re.IGNORECASE)
"""What a message says when the call itself was wrong (not the tool's work): left alone."""


@rule("tool-error-as-jsonrpc-error", group="methods", severity="warning", on=["response"], layer="mcp",
      ref='MCP server/tools §Error Handling: "Tool Execution Errors: Reported in tool results with isError: true"; '
          'protocol errors (unknown tool, invalid arguments) are JSON-RPC errors. A heuristic: an internal error '
          '(-32603) whose message does not name a protocol problem is read as a tool failure',
      summary="tools/call answered by a JSON-RPC internal error that reads like the tool's own failure (heuristic: "
              "an isError result lets the model see it)",
      when=["tool-call-error"])
def tool_error_as_jsonrpc_error(msg, s):
    error = msg.value.get("error") if type(msg.value) is dict else None
    if type(error) is not dict or error.get("code") != INTERNAL_ERROR:
        return None
    text = error.get("message")
    if type(text) is not str or not text.strip() or _PROTOCOL_TROUBLE.search(text):
        return None
    return Hit(f"tools/call failed with a JSON-RPC internal error ({text[:80]!r}): a tool's own failure is meant to "
               "be a result with isError: true, which the model sees", related=msg.request.seq if msg.request else None)
