"""Envelope rules: one frame or one message on its own (docs/findings.md "Envelope").

`envelope` checks see only a message's Signature (analyzer/analysis/classify.py) and are evaluated once
per distinct signature; `frame` checks see the whole frame (its parse, its top-level shape)."""

from __future__ import annotations

from mcptap.analysis.mcp import BATCH_REVISIONS
from mcptap.analysis.rules.registry import Hit, rule

JSONRPC = "JSON-RPC 2.0 §4 Request object, §5 Response object"
MCP_MESSAGES = "MCP basic (messages) §Requests/§Responses: T/<rev> and J/<rev> JSONRPCMessage"


# -- the frame as a whole -----------------------------------------------------------------------

@rule("parse-error", group="envelope", severity="error", on=["frame"],
      ref="JSON-RPC 2.0 §5.1 (-32700 Parse error); MCP basic/transports: messages MUST be UTF-8 JSON",
      summary="the frame is not valid JSON, or not UTF-8",
      when=['unparseable'])
def parse_error(frame, s):
    if frame.parsed.error is not None:
        return Hit(frame.parsed.error)


@rule("frame-truncated", group="envelope", severity="warning", on=["frame"],
      ref="mcptap capture bound (--max-frame, docs/record-stdio.md); MCP basic/transports: each message is one whole JSON-RPC message",
      summary="the frame was larger than the capture's --max-frame: it is stored cut at the limit and not analysed",
      when=['truncated'])
def frame_truncated(frame, s):
    size = s.cut.get(frame.seq) if s.cut else None
    return Hit(f"the frame is {size} bytes; only its first {frame.value} are stored (--max-frame): "
               "it is not analysed")


@rule("stdout-noise", group="envelope", severity="error", on=["frame"],
      ref='MCP basic/transports §stdio: "The server MUST NOT write anything to its stdout that is not a valid MCP message."',
      summary="stdio: the server wrote a line on stdout that is not a JSON-RPC message (logs belong on stderr)",
      when=['unparseable', 'invalid'])
def stdout_noise(frame, s):
    if not s.stdio or frame.direction != "s2c":
        return None
    if frame.parsed.error is not None:
        return Hit("the server wrote a line on stdout that is not JSON; logs belong on stderr")
    if frame.kind == "invalid" and frame.sig.shape != "object":
        return Hit("the server wrote a JSON value on stdout that is not a JSON-RPC message")
    return None


@rule("duplicate-key", group="envelope", severity="warning", on=["frame"],
      ref='RFC 8259 §4: "The names within an object SHOULD be unique" (MCP and JSON-RPC are silent)',
      summary="an object in the frame repeats a member name; parsers disagree on which value wins",
      when=['duplicates'])
def duplicate_key(frame, s):
    dups = frame.parsed.duplicate_keys
    if dups:
        names = ", ".join(sorted(set(dups)))
        return Hit(f"member name repeated within one object: {names} (this analysis kept the last value)")


@rule("batch-used", group="envelope", severity={"jsonrpc": "info", "mcp": "error", "2025-03-26": "info"},
      on=["frame"],
      ref="JSON-RPC 2.0 §6 Batch; MCP 2025-03-26 basic §Batching (MAY send, MUST receive); removed in 2025-06-18 (changelog, PR #416)",
      summary="a top-level array (a batch): permitted in 2025-03-26 and base JSON-RPC, not in other MCP revisions",
      when=['batch'])
def batch_used(frame, s):
    if frame.kind != "batch":
        return None
    n = len(frame.value)
    if s.revision is None:
        return Hit(f"a batch of {n} messages (base JSON-RPC allows batches; no MCP revision is known)")
    if s.revision in BATCH_REVISIONS:
        kinds = {m.kind for m in frame.elements}
        if "request" in kinds or "notification" in kinds:
            if kinds & {"response", "error"}:
                return Hit("a batch mixing requests or notifications with responses: 2025-03-26 allows "
                           "batches of one or the other", severity="error")
            if any(m.method == "initialize" for m in frame.elements):
                return Hit('initialize inside a batch: "The initialize request MUST NOT be part of a JSON-RPC batch"',
                           severity="error")
        return Hit(f"a batch of {n} messages (2025-03-26 permits batches)")
    return Hit(f"a batch of {n} messages: MCP {s.revision} has no batches (removed in 2025-06-18)")


@rule("empty-batch", group="envelope", severity="error", on=["frame"],
      ref='JSON-RPC 2.0 §6: an empty array is an Invalid Request; MCP 2025-03-26: "one or more"',
      summary="a top-level empty array",
      when=['invalid'])
def empty_batch(frame, s):
    if frame.kind == "invalid" and frame.sig.shape == "array":
        return Hit("an empty array: not a batch, an Invalid Request")


# -- one message: its signature -----------------------------------------------------------------

@rule("not-an-object", group="envelope", severity="error", on=["envelope"], ref=JSONRPC,
      summary="the message is a string, number, boolean, null or (inside a batch) an array")
def not_an_object(sig):
    if sig.shape == "scalar":
        return "a JSON-RPC message must be an object, not a bare value"
    if sig.shape == "array":
        return "a batch element that is itself an array (an extra batch wrapper)"


@rule("bad-jsonrpc-version", group="envelope", severity="error", on=["envelope"], ref=JSONRPC,
      summary='`jsonrpc` missing or not exactly the string "2.0"')
def bad_jsonrpc_version(sig):
    if sig.shape == "object" and sig.jsonrpc != "ok":
        return '`jsonrpc` is missing' if sig.jsonrpc == "absent" else '`jsonrpc` is not exactly the string "2.0"'


@rule("method-not-string", group="envelope", severity="error", on=["envelope"], ref=JSONRPC,
      summary="`method` present but not a string")
def method_not_string(sig):
    if sig.method == "bad":
        return "`method` is not a string"


@rule("params-not-structured", group="envelope", severity="error", on=["envelope"],
      ref="JSON-RPC 2.0 §4.2: params MUST be a Structured value (Array or Object)",
      summary="`params` present but neither an object nor an array")
def params_not_structured(sig):
    if sig.params == "bad":
        return "`params` is neither an object nor an array"


@rule("params-not-object", group="envelope", severity="warning", on=["envelope"], layer="mcp",
      ref="MCP T/<rev> and J/<rev>: JSONRPCRequest.params and JSONRPCNotification.params are objects",
      summary="`params` is an array: MCP methods take object params")
def params_not_object(sig):
    if sig.params == "array" and sig.method == "str":
        return "`params` is an array (by-position); MCP methods take an object"


@rule("id-invalid-type", group="envelope", severity="error", on=["envelope"],
      ref="JSON-RPC 2.0 §4: an id is a String, Number or Null; Boolean is not a Number",
      summary="`id` is a boolean, object or array")
def id_invalid_type(sig):
    if sig.id == "bool":
        return "`id` is a boolean"
    if sig.id == "container":
        return "`id` is an object or an array"


@rule("id-null", group="envelope", severity={"jsonrpc": "warning", "mcp": "error"}, on=["envelope"],
      ref='JSON-RPC 2.0 §4 (Null ids discouraged); MCP basic §Requests: "Unlike base JSON-RPC, the ID MUST NOT be null."',
      summary='a request with "id": null')
def id_null(sig):
    if sig.id == "null" and sig.method == "str":
        return 'a request with "id": null (it collides with the id of errors for unreadable requests)'


@rule("id-fractional", group="envelope", severity={"jsonrpc": "warning", "mcp": "error"}, on=["envelope"],
      ref='JSON-RPC 2.0 §4 (fractional ids discouraged); MCP basic §Requests: "Requests MUST include a string or integer ID."',
      summary="a request id that is a non-integer number")
def id_fractional(sig):
    if sig.method != "str":
        return None
    if sig.id == "fraction":
        return "the request id is a fractional number"
    if sig.id == "integral":
        return Hit("the request id is written with a fraction or exponent (such as 1.0 or 1e0); parsers "
                   "differ on whether that is an integer", severity="warning")


@rule("result-and-error", group="envelope", severity="error", on=["envelope"],
      ref='JSON-RPC 2.0 §5: "Either the result member or error member MUST be included, but both members MUST NOT be included."',
      summary="both `result` and `error`")
def result_and_error(sig):
    if sig.result and sig.error != "absent":
        return "a response with both `result` and `error`"


@rule("no-result-or-error", group="envelope", severity="error", on=["envelope"], ref=JSONRPC,
      summary="`id` but no `method`, `result` or `error`")
def no_result_or_error(sig):
    if sig.shape == "object" and sig.id != "absent" and sig.method == "absent" and not sig.result and sig.error == "absent":
        return "an `id` with no `method`, `result` or `error`: neither a request nor a response"


@rule("response-without-id", group="envelope", severity={"mcp": "error", "jsonrpc": "error", "2025-11-25": "info"},
      on=["envelope"],
      ref="JSON-RPC 2.0 §5: id is REQUIRED in a response; MCP 2025-11-25 JSONRPCErrorResponse makes id optional "
          "(only when the request id could not be read); a result has an id in every revision",
      summary="`result` or `error` with no `id` member (an error without one: info in 2025-11-25; a result: "
              "an error in every revision)")
def response_without_id(sig):
    if sig.shape == "object" and sig.id == "absent" and sig.method == "absent" and (sig.result or sig.error != "absent"):
        if sig.result:
            return Hit("a result with no `id` member (a result always answers a request it names)", severity="error")
        return "a response with no `id` member"


@rule("error-object-invalid", group="envelope", severity="error", on=["envelope"],
      ref='JSON-RPC 2.0 §5.1; MCP basic §Responses: "Error codes MUST be integers."',
      summary="`error` not an object, or `code` not an integer, or `message` not a string")
def error_object_invalid(sig):
    if sig.error == "bad":
        return "`error` must be an object with an integer `code` and a string `message`"
