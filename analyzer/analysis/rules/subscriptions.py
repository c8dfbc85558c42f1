"""2026-07-28 `subscriptions/listen` streams over HTTP (MCP 2026-07-28 basic/patterns/subscriptions;
docs/findings.md "Transport"): the acknowledgment first, the subscriptionId on every message of the
stream, and no notification the filter did not ask for. Exchange rules, on the POST that opened the
stream, from what the session core noted of each message on it (analyzer/analysis/exchanges.py)."""

from __future__ import annotations

from mcptap.analysis import mcp
from mcptap.analysis.exchanges import LISTEN
from mcptap.analysis.rules.registry import Hit, rule

SUBS = "MCP 2026-07-28 basic/patterns/subscriptions"
ACK = "notifications/subscriptions/acknowledged"
FILTERED = {"notifications/tools/list_changed": "toolsListChanged",
            "notifications/prompts/list_changed": "promptsListChanged",
            "notifications/resources/list_changed": "resourcesListChanged"}
"""The notifications a listen filter turns on by a boolean member (resources/updated: by URI)."""


def _stream(ex, s):
    if not s.stateless or ex.methods != (LISTEN,):
        return None
    return s.listen_streams.get(ex.row["id"])


@rule("subscription-ack-missing", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{SUBS} §Acknowledgment: "The server MUST send notifications/subscriptions/acknowledged as the first message '
          'carrying the subscription\'s ID in _meta under io.modelcontextprotocol/subscriptionId, and MUST NOT send any '
          'notification on the subscription before it."',
      summary="a subscriptions/listen stream whose first notification is not notifications/subscriptions/acknowledged")
def ack_missing(ex, s):
    stream = _stream(ex, s)
    notes = [(seq, method) for seq, method, _said, _body in stream.messages if method is not None] if stream else []
    if not notes or notes[0][1] == ACK:
        return None
    seq, method = notes[0]
    return Hit(f"the subscriptions/listen stream of {ex} sent {method} (frame {seq}) before any "
               f"{ACK}", seq=seq, related=ex.seq)


@rule("subscription-id-mismatch", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{SUBS} §Receiving Notifications: "All notifications delivered on the stream carry '
          'io.modelcontextprotocol/subscriptionId in _meta, identifying the subscriptions/listen request that opened the '
          'stream. The value is the JSON-RPC ID of the subscriptions/listen request."; §Graceful Closure: "Like every '
          'other message on the stream, the response carries io.modelcontextprotocol/subscriptionId in _meta"',
      summary="a message on a subscriptions/listen stream whose _meta subscriptionId is missing or not the id of the "
              "listen request")
def id_mismatch(ex, s):
    stream = _stream(ex, s)
    if stream is None or stream.id is mcp.ABSENT:
        return None
    wrong = [(seq, method, said) for seq, method, said, _body in stream.messages
             if said is mcp.ABSENT or said != stream.id or type(said) is not type(stream.id)]
    if not wrong:
        return None
    seq, method, said = wrong[0]
    what = method or "the closing answer"
    how = "carries no subscriptionId" if said is mcp.ABSENT else f"says subscriptionId {said!r}"
    more = f" ({len(wrong) - 1} more on the stream)" if len(wrong) > 1 else ""
    return Hit(f"{what} on the subscriptions/listen stream of {ex} {how}; the listen request's id is "
               f"{stream.id!r}{more}", seq=seq, related=ex.seq)


@rule("subscription-unrequested", group="transport", severity="error", on=["exchange"], layer="mcp",
      ref=f'{SUBS} §Opening a Stream: "The server MUST NOT send notification types the client has not explicitly '
          'requested."',
      summary="a subscriptions/listen stream carries a list_changed or resources/updated notification its filter did "
              "not ask for")
def unrequested(ex, s):
    stream = _stream(ex, s)
    if stream is None:
        return None
    wanted = stream.filter
    uris = wanted.get("resourceSubscriptions")
    uris = uris if type(uris) is list else []
    for seq, method, _said, body in stream.messages:
        if method in FILTERED and wanted.get(FILTERED[method]) is not True:
            return Hit(f"{method} on the subscriptions/listen stream of {ex}, whose filter did not set "
                       f"{FILTERED[method]}", seq=seq, related=ex.seq)
        if method == "notifications/resources/updated" and body.get("uri") not in uris:
            return Hit(f"{method} for {body.get('uri')!r} on the subscriptions/listen stream of {ex}, whose filter's "
                       "resourceSubscriptions do not name it", seq=seq, related=ex.seq)
    return None
