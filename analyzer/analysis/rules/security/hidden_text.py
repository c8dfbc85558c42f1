"""`description-hidden-text`: characters a reader does not see in a definition's names and
descriptions (analyzer/analysis/security/text.py)."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule
from mcptap.analysis.security.text import MAX_SHOWN, hidden


@rule("description-hidden-text", group="security", severity="warning", on=["declared"], layer="mcp",
      ref="Tool poisoning (Invariant Labs, \"MCP Security Notification: Tool Poisoning Attacks\", 2025; Unicode "
          "TR36 §2 mixed-script confusables; Unicode tag characters, \"ASCII smuggling\"); MCP server/tools §Security "
          "Considerations: \"Clients SHOULD ... consider tool annotations to be untrusted\"",
      summary="a tool, prompt, resource or template holds invisible or control characters, bidi overrides, Unicode "
              "tag characters or mixed-script lookalike words in a name or description (each shown escaped, with "
              "its JSON path and position)")
def description_hidden_text(definition, ctx):
    found = hidden(definition.item)
    if not found:
        return None
    shown = "; ".join(f"{h.what} at {h.path}[{h.at}]" for h in found[:MAX_SHOWN])
    more = f" and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else ""
    return Hit(f"{definition.what} hides {len(found)} character{'s' if len(found) > 1 else ''} or lookalike "
               f"word{'s' if len(found) > 1 else ''} a reader does not see: {shown}{more}")
