"""Cancellation and progress rules (docs/mcp-reference.md section 6): notifications/cancelled
and notifications/progress, followed per direction by the session core."""

from __future__ import annotations

from mcptap.analysis.rules.registry import Hit, rule

CANCEL = "MCP basic/utilities/cancellation §Behavior Requirements"
PROGRESS = "MCP basic/utilities/progress §Behavior Requirements"


@rule("cancel-unknown-request", group="pairing", severity="info", on=["notification"],
      ref=f'{CANCEL}: "Cancellation notifications MUST only reference requests that: Were previously issued in '
          'the same direction; Are believed to still be in-progress" (races make it info)',
      summary="notifications/cancelled names an id its sender never issued that way, or one already answered",
      when=['cancel:answered', 'cancel:other-side', 'cancel:unknown'])
def cancel_unknown_request(msg, s):
    if msg.fact == "cancel:answered":
        return Hit(f"cancels a request already answered at frame {msg.related} (a race the spec allows)",
                   related=msg.related)
    if msg.fact == "cancel:other-side":
        return Hit("cancels an id that the other side issued, not this one")
    if msg.fact == "cancel:unknown":
        return Hit("cancels an id this side never issued in this session")


@rule("response-after-cancel", group="pairing", severity="info", on=["response"],
      ref=f'{CANCEL}: receivers SHOULD NOT answer a cancelled request; "The sender of the cancellation '
          'notification SHOULD ignore any response to the request that arrives afterward"',
      summary="a response arrived for a request after it was cancelled",
      when=['after-cancel'])
def response_after_cancel(msg, s):
    req = msg.request
    if req is not None and req.cancelled is not None and req.cancelled < msg.seq:
        return Hit(f"answers the request at frame {req.seq}, cancelled at frame {req.cancelled}", related=req.cancelled)


@rule("progress-unknown-token", group="pairing", severity="warning", on=["notification"],
      ref=f'{PROGRESS}: "Progress notifications MUST only reference tokens that: Were provided in an active '
          'request; Are associated with an in-progress operation"',
      summary="notifications/progress with a token no outstanding request carried",
      when=['progress:after-completion', 'progress:unknown'])
def progress_unknown_token(msg, s):
    if msg.fact == "progress:after-completion":
        return Hit(f"progress for a request already answered at frame {msg.related} (progress MUST stop "
                   "after completion)", related=msg.related)
    if msg.fact == "progress:unknown":
        return Hit("progress for a token no request in progress carried")


@rule("progress-not-increasing", group="pairing", severity="warning", on=["notification"],
      ref='MCP basic/utilities/progress: "The progress value MUST increase with each notification"',
      summary="a progress value that did not increase for its token",
      when=['progress:not-increasing'])
def progress_not_increasing(msg, s):
    if msg.fact == "progress:not-increasing":
        return Hit(f"progress did not increase (request at frame {msg.related})", related=msg.related)
