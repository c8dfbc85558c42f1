"""Definition rules: a tool, prompt, resource or resource template, or the server's instructions,
that differ from what a baseline approved or from what the same session listed before (a "rug
pull"), and definitions that cost more of a model's context than the budget allows. Each check
gets one `Delta` (analyzer/analysis/definitions.py) or one server's cost, and what the session
did with it (analyzer/analysis/drift.py)."""

from __future__ import annotations

from mcptap.analysis.definitions import ADDED, CHANGED, REMOVED
from mcptap.analysis.rules.registry import Hit, rule

LISTS = ("MCP server/tools §Listing Tools, server/prompts, server/resources; §List Changed Notification: "
         "notifications/tools/list_changed")
SHOWN = 8
"""Frames of the calls that used a changed definition, named at most in a finding."""


def _against(ctx) -> str:
    return f"the baseline ({ctx.against})" if ctx.against else "the earlier listing in this session" + (
        " (announced by list_changed)" if ctx.announced else " (no list_changed announced it)")


def _calls(seqs: list[int]) -> str:
    if not seqs:
        return "; no tools/call used it"
    shown = ", ".join(str(s) for s in seqs[:SHOWN]) + (f" and {len(seqs) - SHOWN} more" if len(seqs) > SHOWN else "")
    return f"; used by tools/call at frame{'s' if len(seqs) > 1 else ''} {shown}"


@rule("definition-changed", group="definitions", severity="error", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition the server declared differs from the baseline, or from its earlier listing in the session")
def definition_changed(delta, ctx):
    if delta.op == CHANGED:
        where = ", ".join(delta.paths[:SHOWN]) + (" ..." if len(delta.paths) > SHOWN else "")
        return Hit(f"{delta.what} of {ctx.server} differs from {_against(ctx)} at {where}{_calls(ctx.calls)}",
                   related=ctx.calls[0] if ctx.calls else None)


@rule("definition-added", group="definitions", severity="warning", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition the server declared is not in the baseline, or not in its earlier listing in the session")
def definition_added(delta, ctx):
    if delta.op == ADDED:
        return Hit(f"{delta.what} of {ctx.server} is new against {_against(ctx)}{_calls(ctx.calls)}",
                   related=ctx.calls[0] if ctx.calls else None)


@rule("definition-removed", group="definitions", severity="warning", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition in the baseline, or in the server's earlier listing in the session, is no longer declared")
def definition_removed(delta, ctx):
    if delta.op == REMOVED:
        return Hit(f"{delta.what} of {ctx.server} is gone against {_against(ctx)}")
