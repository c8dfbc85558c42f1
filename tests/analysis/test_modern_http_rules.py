"""The 2026-07-28 rules on HTTP and on rounds of input (analyzer/analysis/rules/headers.py, rounds.py,
authflow.py): each code with a session that fires it and a near neighbour that must not, planted as
the SDKs put them on the wire (tests/e2e/test_e2e_modern_headers.py has real SDK traffic)."""

from __future__ import annotations

import base64
import json

import pytest

from mcptap.analysis import logical_operations
from mcptap.analysis.rules import load
from mcptap.analysis.rules.headers import decoded
from tests.analysis.test_logical_operations import ANSWER, ELICIT, asked, frames
from tests.analysis.test_rules import behind_oauth
from tests.support.sessions import analyze, codes, err, http, modern, note, ok, req

R = "2026-07-28"
DONE = {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}
REGION = {"name": "sql", "inputSchema": {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "shard": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "Shard"}}}}}}


def fields(method: str | None, *extra: tuple[str, str], status: int | None = None, **more) -> dict:
    """An exchange's fields: the request headers a 2026-07-28 client sends, Mcp-Method `method` (None: left out)."""
    named = [("MCP-Protocol-Version", R)] + ([("Mcp-Method", method)] if method else []) + list(extra)
    out = {"protocol_version": R, "request_headers": json.dumps([["Host", "127.0.0.1:1"], *map(list, named)]), **more}
    if status is not None:
        out["status"] = status
    return out


def call(name="greet", *extra, answer=None, status=None, arguments=None, method="tools/call"):
    """One tools/call POST carrying Mcp-Name `name` (None: no header) and `extra` headers."""
    headers = [("Mcp-Name", name)] if name is not None else []
    body = modern(1, "tools/call", {"name": "greet", "arguments": arguments or {}})
    return (fields(method, *headers, *extra, status=status),
            [("c2s", body), ("s2c", answer or ok(1, DONE))])


LISTING = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
LISTED = (fields("tools/list"), [("c2s", modern(9, "tools/list")), ("s2c", ok(9, {"tools": [REGION], **LISTING}))])
PLAIN = (fields("tools/list"), [("c2s", modern(8, "tools/list")), ("s2c", ok(8, {"tools": [
    {"name": "greet", "inputSchema": {"type": "object"}}], **LISTING}))])


def sql(*headers, arguments=None, answer=None, status=None):
    """tools/list declaring `sql` (Mcp-Param-Region, Mcp-Param-Shard), then a call of it."""
    body = modern(1, "tools/call", {"name": "sql", "arguments": arguments if arguments is not None else {
        "region": "us-west1", "query": "select 1"}})
    return http(LISTED, (fields("tools/call", ("Mcp-Name", "sql"), *headers, status=status),
                         [("c2s", body), ("s2c", answer or ok(1, DONE))]))


MISMATCH = err(1, -32020, "Header mismatch: Mcp-Name")
UNKNOWN = (fields("nope/nothing"), [("c2s", modern(1, "nope/nothing")), ("s2c", err(1, -32601, "Method not found"))])


def modern_oauth(*flow, register=None):
    """2026-07-28 behind OAuth: a tools/list refused 401, the flow's exchanges, the tools/list again."""
    listing = [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], **LISTING}))]
    challenge = json.dumps([["WWW-Authenticate", 'Bearer resource_metadata="http://127.0.0.1:1/.well-known/'
                                                 'oauth-protected-resource/mcp"']])
    steps = [({**fields("tools/list"), "status": 401, "role": "auth-challenge", "response_headers": challenge},
              listing[:1])]
    steps += [({"method": "GET", "status": 200, "role": role, "url": url, **more}, []) for role, url, more in flow]
    steps += [(fields("tools/list"), listing)]
    return http(*steps)


AS_META = ("auth-discovery", "http://127.0.0.1:2/.well-known/oauth-authorization-server",
           {"response_body": json.dumps({"issuer": "http://127.0.0.1:2/",
                                         "authorization_response_iss_parameter_supported": True})})


def redirect(query: str):
    return ("auth-authorize", "http://127.0.0.1:2/authorize?response_type=code&client_id=c",
            {"status": 302, "response_headers": json.dumps([["Location", f"http://127.0.0.1:9/cb?{query}"]])})


def register(body: dict):
    return ("auth-register", "http://127.0.0.1:2/register", {"method": "POST", "status": 201,
                                                             "request_body": json.dumps(body)})


ISS = "iss=http%3A%2F%2F127.0.0.1%3A2%2F"
CODE = "code=%5Bredacted%3A0123456789abcdef%5D&state=s"
NATIVE = {"redirect_uris": ["http://127.0.0.1:9/cb"], "application_type": "native"}

SUB = "io.modelcontextprotocol/subscriptionId"


def listen(*sent, wanted=None, ident=1):
    """A subscriptions/listen POST (filter `wanted`) answered by an SSE stream of `sent` notifications
    (method, subscriptionId or None for none, more params), then its closing answer."""
    notes = [("s2c", note(m, {**({"_meta": {SUB: sid}} if sid is not None else {}), **more})) for m, sid, more in sent]
    closing = ok(ident, {"resultType": "complete", "_meta": {SUB: ident}})
    return http((fields("subscriptions/listen", response_type="text/event-stream"),
                 [("c2s", modern(ident, "subscriptions/listen", {"notifications": wanted or {"toolsListChanged": True}})),
                  *notes, ("s2c", closing)]))


ACKED = ("notifications/subscriptions/acknowledged", 1, {"notifications": {"toolsListChanged": True}})
TOOLS_CHANGED = ("notifications/tools/list_changed", 1, {})

# code: (session that fires it, a near neighbour that must not)
CASES = {
    "subscription-ack-missing": (listen(TOOLS_CHANGED, ACKED), listen(ACKED, TOOLS_CHANGED)),
    "subscription-id-mismatch": (listen(ACKED, ("notifications/tools/list_changed", None, {})),
                                 listen(ACKED, TOOLS_CHANGED)),
    "subscription-unrequested": (listen(ACKED, ("notifications/prompts/list_changed", 1, {})),
                                 listen(ACKED, ("notifications/resources/updated", 1, {"uri": "file:///a"}),
                                        wanted={"resourceSubscriptions": ["file:///a"]})),
    "mcp-method-header-missing": (http(call(method=None)), http(call())),
    "mcp-method-header-mismatch": (http(call(method="tools/list")), http(call())),
    "mcp-name-header-missing": (http(call(None)), http(call())),
    "mcp-name-header-mismatch": (http(call("other")), http(call("=?base64?" + base64.b64encode(b"greet").decode()
                                                               + "?="))),
    "mcp-param-header-missing": (sql(), sql(("Mcp-Param-Region", "us-west1"))),
    "mcp-param-header-mismatch": (sql(("Mcp-Param-Region", "eu-west1")), sql(("mcp-param-region", "us-west1"))),
    "header-mismatch-accepted": (http(call("other")), http(call("other", answer=MISMATCH, status=400))),
    "header-mismatch-false": (http(PLAIN, call(answer=MISMATCH, status=400)),
                              http(PLAIN, call("other", answer=MISMATCH, status=400))),
    "error-http-status": (http(({**UNKNOWN[0], "status": 200}, UNKNOWN[1])), http(({**UNKNOWN[0], "status": 404},
                                                                                  UNKNOWN[1]))),
    "auth-iss-missing": (modern_oauth(AS_META, redirect(CODE)), modern_oauth(AS_META, redirect(f"{CODE}&{ISS}"))),
    "auth-iss-mismatch": (modern_oauth(AS_META, redirect(f"{CODE}&iss=http%3A%2F%2Fevil.example%2F")),
                          modern_oauth(AS_META, redirect(f"{CODE}&{ISS}"))),
    "auth-application-type-missing": (modern_oauth(register({"redirect_uris": ["http://127.0.0.1:9/cb"]})),
                                      modern_oauth(register(NATIVE))),
    "auth-dynamic-registration": (modern_oauth(register(NATIVE)), modern_oauth(AS_META)),
}


def mrtr(caps=None, echo="S1", answer=None):
    """tools/call (its _meta declaring `caps`) answered input_required, retried echoing `echo`, answered `answer`."""
    meta = {"io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {"elicitation": {}}}
    return frames(("c2s", modern(1, "tools/call", {"name": "greet", "arguments": {}}, **meta)),
                  ("s2c", ok(1, asked("S1"))),
                  ("c2s", modern(2, "tools/call", {"name": "greet", "arguments": {}, "inputResponses": ANSWER,
                                                   "requestState": echo}, **meta)),
                  ("s2c", answer or ok(2, DONE)))


ROUND_CASES = {
    "input-request-undeclared": (mrtr(caps={}), mrtr()),
    "request-state-altered-accepted": (mrtr(echo="S1-edited"),
                                       mrtr(echo="S1-edited", answer=err(2, -32602, "requestState failed"))),
}


def round_codes(fs) -> set[str]:
    return {f[3] for f in logical_operations.findings("S", fs, R)}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_code_fires_on_its_example(code):
    assert code in codes(CASES[code][0])


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_codes_near_neighbour_does_not_fire_it(code):
    assert code not in codes(CASES[code][1])


@pytest.mark.parametrize("code", sorted(ROUND_CASES))
def test_each_round_code_fires_on_its_example_and_not_on_its_neighbour(code):
    assert code in round_codes(ROUND_CASES[code][0])
    assert code not in round_codes(ROUND_CASES[code][1])


def test_every_rule_here_is_registered_with_a_reference_and_a_summary():
    for code in {**CASES, **ROUND_CASES}:
        assert load()[code].ref and load()[code].summary


def test_a_conformant_2026_07_28_exchange_gets_no_header_finding():
    session = http(LISTED, call(), (fields("tools/call", ("Mcp-Name", "sql"), ("Mcp-Param-Region", "us-west1"),
                                           ("Mcp-Param-Shard", "7")),
                                    [("c2s", modern(2, "tools/call", {"name": "sql", "arguments": {
                                        "region": "us-west1", "shard": {"n": 7}}})), ("s2c", ok(2, DONE))]),
                   (fields("resources/read", ("Mcp-Name", "file:///a b")),
                    [("c2s", modern(3, "resources/read", {"uri": "file:///a b"})),
                     ("s2c", ok(3, {"contents": [], **LISTING}))]))
    assert codes(session) == []


@pytest.mark.parametrize("header, argument", [("42", 42), ("42.0", 42), ("true", True), ("=?base64?IHBhZGRlZCA=?=", " padded ")])
def test_a_param_header_matches_its_argument_as_the_specification_renders_it(header, argument):
    schema = {"name": "sql", "inputSchema": {"type": "object", "properties": {
        "v": {"type": "integer" if type(argument) is int else "boolean" if type(argument) is bool else "string",
              "x-mcp-header": "V"}}}}
    listed = (fields("tools/list"), [("c2s", modern(9, "tools/list")), ("s2c", ok(9, {"tools": [schema], **LISTING}))])
    body = modern(1, "tools/call", {"name": "sql", "arguments": {"v": argument}})
    session = http(listed, (fields("tools/call", ("Mcp-Name", "sql"), ("Mcp-Param-V", header)),
                            [("c2s", body), ("s2c", ok(1, DONE))]))
    assert not {"mcp-param-header-mismatch", "mcp-param-header-missing"} & set(codes(session))


def test_a_param_header_for_an_absent_or_null_argument_is_a_mismatch_and_none_is_needed():
    assert "mcp-param-header-mismatch" in codes(sql(("Mcp-Param-Region", "us-west1"), arguments={"region": None}))
    assert codes(sql(arguments={"query": "select 1"})) == []


def test_the_base64_sentinel_is_decoded_and_a_value_no_client_sends_matches_nothing():
    assert decoded("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界"
    assert decoded("plain") == "plain"
    assert decoded("=?base64?SGVs!!!bG8=?=") is None
    assert decoded(" padded ") is None
    assert decoded("Hello, 世界") is None


def test_header_rules_judge_only_2026_07_28_streamable_http_posts_with_their_headers_stored():
    no_headers = http(({"protocol_version": R}, call(None)[1]))
    assert not {"mcp-name-header-missing", "mcp-method-header-missing"} & set(codes(no_headers))
    stdio = [("c2s", modern(1, "tools/call", {"name": "greet"})), ("s2c", ok(1, DONE))]
    assert codes(stdio) == []


def test_an_accepted_mismatch_names_a_protocol_version_header_that_disagrees_with_meta():
    session = http(({**call()[0], "request_headers": json.dumps([["MCP-Protocol-Version", "2025-11-25"],
                                                                  ["Mcp-Method", "tools/call"], ["Mcp-Name", "greet"]]),
                     "protocol_version": "2025-11-25"}, call()[1]))
    assert {"protocol-version-header-mismatch", "header-mismatch-accepted"} <= set(codes(session))


def test_a_false_refusal_is_not_claimed_for_a_tool_whose_headers_cannot_be_known():
    unlisted = http(call(answer=MISMATCH, status=400))
    assert "header-mismatch-false" not in codes(unlisted)  # never listed: it may want Mcp-Param headers
    assert "header-mismatch-false" in codes(http(PLAIN, call(answer=MISMATCH, status=400)))
    assert "header-mismatch-false" in codes(http(LISTED, PLAIN, call(answer=MISMATCH, status=400)))


def test_a_missing_client_capability_refused_400_is_right_and_200_is_not():
    refusal = err(1, -32021, "Server requires the elicitation capability")
    assert "error-http-status" not in codes(http(call(answer=refusal, status=400)))
    assert "error-http-status" in codes(http(call(answer=refusal, status=200)))


def test_a_listen_stream_acknowledged_with_its_id_and_only_what_it_asked_for_gets_no_finding():
    assert codes(listen(ACKED, TOOLS_CHANGED)) == []
    assert "subscription-id-mismatch" in codes(listen(ACKED, ("notifications/tools/list_changed", "1", {})))


def test_invalid_params_for_a_request_missing_its_meta_is_400_and_for_other_reasons_any_status():
    bare = req(1, "tools/call", {"name": "greet"})
    refusal = err(1, -32602, "missing _meta")
    assert "error-http-status" in codes(http((fields("tools/call", ("Mcp-Name", "greet"), status=200),
                                              [("c2s", bare), ("s2c", refusal)])), revision=R)
    assert "error-http-status" not in codes(http((fields("tools/call", ("Mcp-Name", "greet"), status=400),
                                                  [("c2s", bare), ("s2c", refusal)])), revision=R)
    assert "error-http-status" not in codes(http(call(answer=err(1, -32602, "unknown tool"), status=200)))


def test_a_tool_failure_as_a_json_rpc_error_is_a_warning():
    assert load()["tool-error-as-jsonrpc-error"].severity_for(R) == "warning"


def test_a_loopback_server_answering_an_origin_and_host_that_name_the_same_foreign_host_is_rebinding():
    from tests.analysis.test_rules import SESSION, over_http, with_headers

    rebound = {**SESSION, "request_headers": json.dumps([["Host", "evil.example:8000"],
                                                         ["Origin", "http://evil.example:8000"]])}
    found = [f for f in analyze(over_http(rebound))[2] if f[3] == "dns-rebinding-unprotected"]
    assert len(found) == 1 and "rebound" in found[0][5]
    assert "dns-rebinding-unprotected" not in codes(over_http({**rebound, "status": 403}))
    assert "dns-rebinding-unprotected" not in codes(over_http({**SESSION, **with_headers(Origin="http://127.0.0.1:1")}))


def test_a_2025_03_26_style_flow_without_protected_resource_metadata_needs_no_resource_parameter():
    legacy = [("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", {"status": 404}),
              ("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-authorization-server", {}),
              ("auth-authorize", "http://127.0.0.1:1/authorize?response_type=code&client_id=c", {"status": 302})]
    assert "auth-resource-missing" not in codes(behind_oauth(*legacy, challenge='Bearer error="invalid_token"'))
    with_prm = [("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", {})] + legacy[1:]
    assert "auth-resource-missing" in codes(behind_oauth(*with_prm, challenge='Bearer error="invalid_token"'))


def test_the_2026_07_28_authorization_rules_leave_earlier_revisions_alone():
    older = behind_oauth(AS_META, redirect(CODE), register({"redirect_uris": ["http://127.0.0.1:9/cb"]}))
    assert not {"auth-iss-missing", "auth-application-type-missing", "auth-dynamic-registration"} & set(codes(older))


def test_an_iss_missing_where_the_metadata_does_not_advertise_it_is_info_and_an_error_where_it_does():
    quiet = ("auth-discovery", AS_META[1], {"response_body": json.dumps({"issuer": "http://127.0.0.1:2/"})})
    found = {f[3]: f[4] for f in analyze(modern_oauth(quiet, redirect(CODE)))[2]}
    assert found.get("auth-iss-missing") == "info"
    found = {f[3]: f[4] for f in analyze(modern_oauth(AS_META, redirect(CODE)))[2]}
    assert found.get("auth-iss-missing") == "error"


ALL_CODES = set(CASES) | set(ROUND_CASES)
"""Every code this module gives cases for (tests/analysis/test_rules.py counts them)."""
