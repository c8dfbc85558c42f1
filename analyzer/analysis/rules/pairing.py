"""Pairing rules: requests and responses per session, direction aware (docs/findings.md
"Pairing"). A response is matched against the requests sent the opposite way; the session core
(analyzer/analysis/session.py) works out the match and these rules say what is wrong with it."""

from __future__ import annotations

from mcptap.analysis.classify import ERROR, REQUEST
from mcptap.analysis.mcp import BATCH_REVISIONS, STATELESS_REVISIONS
from mcptap.analysis.rules.registry import Hit, rule

RESPONSES = "JSON-RPC 2.0 §5; MCP basic §Responses: \"Responses MUST include the same ID as the request they correspond to.\""


@rule("unknown-response-id", group="pairing", severity="error", on=["response"],
      ref=RESPONSES + "; MCP basic/transports §Streamable HTTP: an answer in a POST's response belongs to the "
                      "request that POST carried",
      summary="a response whose id matches no request sent the other way in this session (over HTTP: in a POST's "
              "answer, no request that POST carried)",
      when=['unknown', 'other-exchange'])
def unknown_response_id(msg, s):
    shown = "null" if msg.id is None else msg.id_json
    if msg.pairing == "unknown":
        return Hit(f"answers id {shown}, which no request sent the other way in this session carried")
    if msg.pairing == "other-exchange":
        return Hit(f"answers id {shown} in the answer to an HTTP request that did not carry it (the request with "
                   f"that id, at frame {msg.related}, came in another exchange)", related=msg.related)


@rule("id-type-mismatch", group="pairing", severity="error", on=["response"], ref=RESPONSES,
      summary="a response id equal to a request id only across types (7 and \"7\")",
      when=['type-mismatch'])
def id_type_mismatch(msg, s):
    if msg.pairing == "type-mismatch":
        return Hit(f"answers the request at frame {msg.related} but writes its id as {msg.id_json}, "
                   f"not as the request did ({msg.request.id_json})",
                   related=msg.related)


@rule("duplicate-response", group="pairing", severity="error", on=["response"], ref=RESPONSES,
      summary="a second response for a request already answered",
      when=['duplicate'])
def duplicate_response(msg, s):
    if msg.pairing == "duplicate":
        return Hit(f"a second response to a request already answered at frame {msg.related}", related=msg.related)


@rule("duplicate-request-id", group="pairing", severity="error", on=["request"],
      ref="JSON-RPC 2.0 §4 (the id correlates the response); MCP basic §Requests",
      summary="a sender reuses an id while its earlier request with that id is unanswered",
      when=['duplicate-outstanding'])
def duplicate_request_id(msg, s):
    if msg.pairing == "duplicate-outstanding":
        return Hit(f"id {msg.id_json} is still awaiting its response (request at frame {msg.related})",
                   related=msg.related)


@rule("request-id-reused", group="pairing", severity="error", on=["request"], layer="mcp",
      ref='MCP basic §Requests (2024-11-05 to 2025-11-25): "The request ID MUST NOT have been previously used by '
          'the requestor within the same session." (2026-07-28 allows reuse after the response)',
      summary="a sender reuses an id it already used in the session",
      when=['reused'])
def request_id_reused(msg, s):
    if msg.pairing == "reused" and s.revision not in STATELESS_REVISIONS:
        return Hit(f"id {msg.id_json} was already used by this side at frame {msg.related}", related=msg.related)


@rule("error-id-null-with-known-id", group="pairing", severity="error", on=["response"],
      ref='JSON-RPC 2.0 §5: id is Null only "if there was an error in detecting the id in the Request object"; '
          "MCP 2025-11-25 basic §Error Responses",
      summary="an error with id null though the offending request's id could be read",
      when=['null-with-known-id'])
def error_id_null_with_known_id(msg, s):
    if msg.pairing == "null-with-known-id":
        return Hit(f"answers with id null, but the message at frame {msg.related} had a readable id",
                   related=msg.related)


@rule("response-to-notification", group="pairing", severity="error", on=["response"],
      ref='JSON-RPC 2.0 §4.1: "The Server MUST NOT reply to a Notification"; MCP basic §Notifications: '
          '"The receiver MUST NOT send a response."',
      summary="a response or error that answers a notification",
      when=['notification'])
def response_to_notification(msg, s):
    if msg.pairing == "notification":
        return Hit(f"answers the notification at frame {msg.related}; notifications get no response",
                   related=msg.related)


@rule("missing-response", group="pairing", severity="error", on=["end"],
      ref='JSON-RPC 2.0 §4 (a request gets exactly one response); MCP basic/utilities/cancellation: a cancelled '
          'request SHOULD NOT be answered; 2026-07-28 Streamable HTTP: "Closing the SSE response stream MUST be '
          'treated as cancellation"',
      summary="a request never answered before its session ended (warning when the end is not known)")
def missing_response(s):
    severity = None if s.ended else "warning"
    for req in s.outstanding.values():
        if req.cancelled is not None or req.rejected or req.stream_closed:
            continue  # cancelled (by notification, or 2026-07-28 by closing its stream), or refused whole
        if req.direction == "s2c" and s.revision in STATELESS_REVISIONS:
            continue  # reported as wrong-direction: nobody may answer it
        where = "before the session ended" if s.ended else "before the capture stopped (the session may have gone on)"
        yield Hit(f"{req.method} got no response {where}", seq=req.seq, idx=req.idx, severity=severity)


@rule("batch-response-shape", group="pairing", severity="error", on=["frame"], layer="mcp",
      ref="MCP 2025-03-26 basic §Batching and T/2025-03-26 JSONRPCBatchResponse: a batch of requests is answered "
          "by an array of their responses",
      summary="2025-03-26: the answer to a batch is not an array of responses for its requests",
      when=['batch', 'answers-batch'])
def batch_response_shape(frame, s):
    if s.revision not in BATCH_REVISIONS:
        return None
    answered = [m for m in frame.elements if m.request is not None and m.kind != REQUEST]
    batches = {id(m.request.batch): m.request.batch for m in answered if m.request.batch is not None}
    if frame.kind != "batch":
        msg = frame.elements[0] if frame.elements else None
        if msg is not None and msg.pairing == "batch-refused":
            return Hit(f"one error for the whole batch at frame {msg.related}: 2025-03-26 requires receiving "
                       "batches, and a batch is answered by an array", related=msg.related)
        if batches:
            batch = next(iter(batches.values()))
            return Hit(f"answers a request of the batch at frame {batch.seq} with a single message, not "
                       "an array of the batch's responses", related=batch.seq)
        return None
    if len(batches) > 1:
        return Hit("one array answers requests of several batches")
    if not batches:
        return None
    batch = next(iter(batches.values()))
    expected = sum(1 for m in batch.elements if m.kind == REQUEST)
    extra = [m for m in frame.elements if m.request is None or m.kind not in ("response", ERROR)]
    if len(answered) != expected or extra:
        return Hit(f"answers {len(answered)} of the {expected} requests of the batch at frame {batch.seq}"
                   + (f" and {len(extra)} other elements" if extra else ""), related=batch.seq)
