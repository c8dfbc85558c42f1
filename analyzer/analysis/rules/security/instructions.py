"""`description-instructs-model`: a description that speaks to the model rather than describing
the tool, scored by the documented patterns of analyzer/analysis/security/patterns.py."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule
from mcptap.analysis.security.patterns import THRESHOLD, descriptions, score


@rule("description-instructs-model", group="security", severity="warning", on=["declared"], layer="mcp",
      ref="Tool poisoning (Invariant Labs, \"Tool Poisoning Attacks\", 2025; OWASP LLM01 prompt injection); MCP "
          "server/tools §Security Considerations: tool descriptions are untrusted unless the server is",
      summary="a tool, prompt, resource or template description addresses the model (read a file, fetch a URL, "
              f"hide it from the user, ignore instructions, call another tool): patterns scored, at least {THRESHOLD}; "
              "the phrases that matched shown")
def description_instructs_model(definition, ctx):
    best = None
    for path, text in descriptions(definition.item):
        scored = score(text)
        if scored.score >= THRESHOLD and (best is None or scored.score > best[1].score):
            best = (path, scored)
    if best is None:
        return None
    path, scored = best
    phrases = "; ".join(f"{p.name} ({p.weight}): {phrase!r}" for p, phrase in scored.matched)
    return Hit(f"{definition.what}'s {path} reads as instructions to the model (score {scored.score}, "
               f"threshold {THRESHOLD}): {phrases}")
