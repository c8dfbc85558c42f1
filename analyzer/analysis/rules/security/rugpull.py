"""`definition-changed-after-use`, the rug pull: a tool whose description or schema changed after
a call used it (a tool removed, or added, is not one: servers hide and show tools legally)."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule

SHOWN = 6


def _frames(seqs: list[int]) -> str:
    if not seqs:
        return "none"
    return ", ".join(str(s) for s in seqs[:SHOWN]) + (f" and {len(seqs) - SHOWN} more" if len(seqs) > SHOWN else "")


@rule("definition-changed-after-use", group="security", severity="warning", on=["redefined"], layer="mcp",
      ref="Rug pull (Invariant Labs, \"Tool Poisoning Attacks\", 2025): a tool approved as it was, then changed; "
          "MCP server/tools §List Changed Notification (with or without list_changed: the change is reported either "
          "way)",
      summary="a tool's description, title, schema or annotations changed after a tools/call used it, with the "
              "calls before and after the change")
def definition_changed_after_use(redefinition, ctx):
    where = ", ".join(redefinition.paths[:SHOWN]) + (" ..." if len(redefinition.paths) > SHOWN else "")
    return Hit(f"tool {redefinition.name!r} changed at {where} after it was used (listed at frame "
               f"{redefinition.before_seq}, then at {redefinition.seq}, "
               f"{'announced by' if redefinition.announced else 'no'} list_changed): calls before at frames "
               f"{_frames(redefinition.calls_before)}; calls after at frames {_frames(redefinition.calls_after)}",
               related=redefinition.calls_before[-1])
