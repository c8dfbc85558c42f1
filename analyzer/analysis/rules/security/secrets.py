"""`secret-in-arguments`: a credential in a tool call's arguments, or in a tool's result headed to
the model, as the redaction detectors see it (analyzer/analysis/security/secrets.py): the kind of
secret and its path named, never its value."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule

SHOWN = 6


def _listed(found: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{kind} at {path.split('|', 1)[0]}" for path, kind in found[:SHOWN])
    return shown + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "")


@rule("secret-in-arguments", group="security", severity="warning", on=["call", "result"], layer="mcp",
      ref="OWASP LLM02 sensitive information disclosure; MCP basic/security_best_practices (token passthrough); "
          "the detectors of mcptap's redaction (docs/contract.md, Redaction), whose record of what capture "
          "redacted is kept with the frame",
      summary="a tools/call's arguments, or its result headed to the model, carry a credential (a credential "
              "member, a Bearer token, a URL with a password or token): its kind and path, never its value")
def secret_in_arguments(item, ctx):
    found = item.secrets()
    if not found:
        return None
    if hasattr(item, "call"):  # an answer
        return Hit(f"the result of tools/call {item.call.name if item.call else '?'!r} carries "
                   f"{len(found)} secret{'s' if len(found) > 1 else ''} to the model: {_listed(found)}",
                   related=item.call.seq if item.call else None)
    return Hit(f"tools/call {item.name!r} sends {len(found)} secret{'s' if len(found) > 1 else ''} in its "
               f"arguments: {_listed(found)}")
