"""Definition rules: a tool, prompt, resource or resource template, or the server's instructions,
that differ from what a baseline approved or from what the same session listed before, and
definitions that cost more of a model's context than the budget allows. Each check gets one
`Delta` (analyzer/analysis/declared.py) or one server's cost, and what the session did with it
(analyzer/analysis/drift.py).

Change is not misbehaviour: a listing that differs from the session's earlier one after the server
announced it with `notifications/*/list_changed` (what the specification asks of a server whose
list changes) is reported at `info`, as a change; one no list_changed announced (a "rug pull"), or
one against a baseline the user approved, is a `warning`."""

from __future__ import annotations

from mcptap.analysis.declared import ADDED, CHANGED, REMOVED
from mcptap.analysis.rules.registry import Hit, rule

LISTS = ("MCP server/tools §Listing Tools, server/prompts, server/resources; §List Changed Notification: "
         "\"When the list of available tools changes, servers that declared the listChanged capability SHOULD send a "
         "notification\" (info when one announced the change)")
SHOWN = 8
"""Frames of the calls that used a changed definition, named at most in a finding."""


def _against(ctx) -> str:
    return f"the baseline ({ctx.against})" if ctx.against else "the earlier listing in this session" + (
        " (announced by list_changed)" if ctx.announced else " (no list_changed announced it)")


def _severity(ctx) -> str | None:
    """`info` for a change within the session that a list_changed announced; else the rule's own."""
    return "info" if ctx.against is None and ctx.announced else None


def _calls(seqs: list[int]) -> str:
    if not seqs:
        return "; no tools/call used it"
    shown = ", ".join(str(s) for s in seqs[:SHOWN]) + (f" and {len(seqs) - SHOWN} more" if len(seqs) > SHOWN else "")
    return f"; used by tools/call at frame{'s' if len(seqs) > 1 else ''} {shown}"


@rule("definition-changed", group="definitions", severity="warning", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition the server declared differs from the baseline, or from its earlier listing in the session "
              "(info when list_changed announced it)")
def definition_changed(delta, ctx):
    if delta.op == CHANGED:
        where = ", ".join(delta.paths[:SHOWN]) + (" ..." if len(delta.paths) > SHOWN else "")
        return Hit(f"{delta.what} of {ctx.server} differs from {_against(ctx)} at {where}{_calls(ctx.calls)}",
                   related=ctx.calls[0] if ctx.calls else None, severity=_severity(ctx))


@rule("definition-added", group="definitions", severity="warning", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition the server declared is not in the baseline, or not in its earlier listing in the session "
              "(info when list_changed announced it)")
def definition_added(delta, ctx):
    if delta.op == ADDED:
        return Hit(f"{delta.what} of {ctx.server} is new against {_against(ctx)}{_calls(ctx.calls)}",
                   related=ctx.calls[0] if ctx.calls else None, severity=_severity(ctx))


@rule("definition-removed", group="definitions", severity="warning", on=["definitions"], layer="mcp", ref=LISTS,
      summary="a definition in the baseline, or in the server's earlier listing in the session, is no longer declared "
              "(info when list_changed announced it)")
def definition_removed(delta, ctx):
    if delta.op == REMOVED:
        return Hit(f"{delta.what} of {ctx.server} is gone against {_against(ctx)}", severity=_severity(ctx))


@rule("context-budget-exceeded", group="definitions", severity="warning", on=["definitions"], layer="mcp",
      ref="mcptap context cost (docs/findings.md, definitions): every definition and instruction a client hands a "
          "model takes its context; budget [analyze] context_budget",
      summary="a server's instructions and definitions take more of a model's context than the budget allows")
def context_budget_exceeded(cost, ctx):
    tokens = cost["total"]["model_tokens"]
    if tokens > ctx["budget"]:
        name, version = ctx["server"]
        tools = sorted(cost["tools"], key=lambda t: -t["model_tokens"])[:3]
        top = ", ".join(f"{t['name']} {t['model_tokens']}" for t in tools)
        return Hit(f"server {name!r}{' ' + version if version else ''} declares {tokens} tokens of definitions "
                   f"({ctx['tokenizer']}), over the budget of {ctx['budget']}" + (f"; largest tools: {top}" if top else ""))
