"""Rules on what messages hold, checked against schemas (analyzer/analysis/results.py runs them,
once per message, where the session core has the frame): the revision's schema, and a tool's
own outputSchema."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule
from mcptap.analysis.schema_validation import MAX_PATHS, MAX_WORDS, describe, era, instance_errors, violations


@rule("schema-violation", group="methods", severity="error", on=["schema"], layer="mcp",
      ref="MCP schema of the session's revision (schema.ts / schema.json, as the mcp-types wire models carry it; "
          "revisions before 2025-11-25 against 2025-11-25's, docs/findings.md says what that checks)",
      summary="a message's params or result is not what its revision's schema says (a required member absent, "
              "a wrong type, a value outside the schema's set, an unknown content block type), with its JSON path")
def schema_violation(failed, s):
    check, error, raw, revision = failed
    found = violations(error, raw)
    hits = [Hit(f"{describe(path, words)} ({check.schema}, {era(revision)} schema)"[:MAX_WORDS])
            for path, words in found[:MAX_PATHS]]
    if len(found) > MAX_PATHS:
        hits[-1] = Hit(f"{hits[-1].message} (and {len(found) - MAX_PATHS} more paths)")
    return hits


@rule("structured-content-mismatch", group="methods", severity="error", on=["schema"], layer="mcp",
      ref='MCP server/tools §Output Schema (2025-06-18 on): "If an output schema is provided: Servers MUST provide '
          'structured results that conform to this schema"; not judged on isError results',
      summary="a tools/call result's structuredContent is absent or does not match the outputSchema the same "
              "session's tools/list declared for that tool, with its JSON path")
def structured_content_mismatch(checked, s):
    tool, validator, content = checked
    if content is None:
        return [Hit(f"$.result.structuredContent: absent, but tool {tool!r} declared an outputSchema")]
    return [Hit(message) for message in instance_errors(validator, content, ("result", "structuredContent"),
                                                        f"the outputSchema of tool {tool!r}")]
