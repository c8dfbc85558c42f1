"""`call-loop`: the same tool called with the same arguments again and again (N times within T
seconds: `[analyze] call_loop`, default 3 in 60), and a tool called far faster than the session's
own rate of calls."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule

RATE_FACTOR = 10
"""How many times the session's own call rate a tool's burst must reach."""
RATE_MIN_CALLS = 20
"""Calls of one tool within the window a burst must have, at least."""


@rule("call-loop", group="security", severity="warning", on=["call", "reading"], layer="mcp",
      ref="OWASP LLM10 unbounded consumption (an agent stuck in a loop); thresholds [analyze] call_loop = "
          "{ calls = 3, seconds = 60 } (docs/security.md)",
      summary="the same tool called with the same arguments N times within T seconds (default 3 in 60), or one "
              "tool called at a rate far above the session's own")
def call_loop(item, ctx):
    if type(item) is list:
        return _rate(item, ctx)
    if item.name is None or item.retry:  # a round of an input_required operation is the same call, answered
        return None
    repeats = ctx.repeats(item)
    if len(repeats) < ctx.loop_calls:
        return None
    fired = ctx.memo.setdefault("call-loop", {})
    last = fired.get((item.name, item.text))
    if last is not None and last in repeats:
        return None  # this loop is reported already
    fired[(item.name, item.text)] = item.seq
    return Hit(f"tools/call {item.name!r} with the same arguments {len(repeats)} times within "
               f"{ctx.loop_seconds:g} s (frames {', '.join(str(s) for s in repeats[:8])})", related=repeats[0])


def _rate(calls, ctx):
    timed = [c for c in calls if c.name is not None]
    if len(timed) < RATE_MIN_CALLS:
        return None
    span = max(timed[-1].ts - timed[0].ts, ctx.loop_seconds)
    per_window = len(timed) / span * ctx.loop_seconds
    hits = []
    by_tool: dict[str, list] = {}
    for c in timed:
        by_tool.setdefault(c.name, []).append(c)
    for name, mine in sorted(by_tool.items()):
        start, best = 0, (0, 0)
        for end in range(len(mine)):
            while mine[end].ts - mine[start].ts > ctx.loop_seconds:
                start += 1
            if end - start + 1 > best[0]:
                best = (end - start + 1, start)
        count, first = best
        if count >= RATE_MIN_CALLS and count >= RATE_FACTOR * per_window:
            hits.append(Hit(f"tool {name!r} called {count} times within {ctx.loop_seconds:g} s from frame "
                            f"{mine[first].seq}, against {per_window:.1f} calls of any tool per {ctx.loop_seconds:g} s "
                            "over the session", seq=mine[first].seq))
    return hits or None
