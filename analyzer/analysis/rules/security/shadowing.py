"""`tool-shadowing`: a description that names another server's tool or tells the model how to use
another tool, and a tool name another server of the same analysis declares too."""

from __future__ import annotations

import re

from mcptap.analysis.rules.registry import Hit, rule
from mcptap.analysis.security.patterns import descriptions

_OTHER_TOOL = re.compile(r"\b(?:instead of|rather than|before|after|when|whenever)\b\s+(?:using|calling|you use|"
                         r"you call|invoking)?\s*(?:the\s+)?[`'\"]?([A-Za-z_][\w.-]{2,})[`'\"]?\s+tool\b",
                         re.IGNORECASE)
"""A sentence about using another tool: "instead of the send_email tool", "when calling the `x` tool"."""


@rule("tool-shadowing", group="security", severity="warning", on=["declared"], layer="mcp",
      ref="Tool shadowing (Invariant Labs, \"Tool Poisoning Attacks\", cross-server shadowing, 2025); MCP "
          "server/tools §Security Considerations",
      summary="a tool's description names a tool it does not declare (another server's, in the same analysis) or "
              "tells the model how to use another tool; or another server in the same analysis declares a tool of "
              "the same name")
def tool_shadowing(definition, ctx):
    if definition.kind != "tools":
        return None
    own = ctx.tools
    said: list[str] = []
    for _path, text in descriptions(definition.item):
        for match in _OTHER_TOOL.finditer(text):
            name = match.group(1)
            if name not in own and name.lower() not in ("this", "that", "other", "same", "any", "each", "every"):
                said.append(f"tells how to use tool {name!r}: {' '.join(match.group(0).split())!r}")
        for name, servers in ctx.catalogue.items():
            if name not in own and len(name) > 2 and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                said.append(f"names tool {name!r} of {', '.join(servers[:3])}")
    hits = []
    if said:
        hits.append(Hit(f"{definition.what}'s description {'; '.join(dict.fromkeys(said))}"))
    others = ctx.catalogue.get(definition.name)
    if others and not definition.changed:
        hits.append(Hit(f"{definition.what} is declared by {', '.join(others[:3])} too"
                        + (f" and {len(others) - 3} more" if len(others) > 3 else "")
                        + ": a client that merges their tools calls one of them by that name"))
    return hits or None
