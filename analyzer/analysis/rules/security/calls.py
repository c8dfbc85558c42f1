"""`tool-undeclared` and `arguments-schema-violation`: a tools/call read against what the
session's listings declared before it."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule
from mcptap.analysis.schema_validation import instance_errors


@rule("tool-undeclared", group="security", severity="warning", on=["call"], layer="mcp",
      ref='MCP server/tools §Calling Tools: "To invoke a tool, clients send a tools/call request" for a tool '
          'tools/list declared; a call for any other name is the model\'s (or an attacker\'s) invention. Judged '
          'only in a session whose tools/list was answered before the call',
      summary="a tools/call names a tool the session's tools/list never declared, or one its latest listing removed")
def tool_undeclared(call, ctx):
    if not call.listed or call.name is None or call.declared is not None:
        return None
    if call.removed_at is not None:
        return Hit(f"tools/call for tool {call.name!r}, which the listing at frame {call.removed_at} removed",
                   related=call.removed_at)
    if ("tools", call.name) in ctx.seen:
        return None  # declared by a page of a listing still being fetched
    return Hit(f"tools/call for tool {call.name!r}, which no tools/list of the session declared")


@rule("arguments-schema-violation", group="security", severity="warning", on=["call"], layer="mcp",
      ref='MCP server/tools §Tool: "inputSchema: JSON Schema defining expected parameters"; §Security '
          'Considerations: "Servers MUST: Validate all tool inputs". Checked with JSON Schema 2020-12 (the '
          'schema\'s own $schema where it names another draft), no remote $ref fetched',
      summary="a tools/call's arguments do not match the inputSchema the session declared for that tool, with "
              "the JSON path")
def arguments_schema_violation(call, ctx):
    if call.declared is None or type(call.declared) is not dict:
        return None
    schema = call.declared.get("inputSchema")
    if type(schema) is not dict:
        return None
    validator = ctx.validator(schema)
    if validator is None:
        return None
    arguments = call.arguments if call.arguments is not None else {}
    return [Hit(message) for message in instance_errors(validator, arguments, ("params", "arguments"),
                                                        f"the inputSchema of tool {call.name!r}")] or None
