"""Every finding code (analyzer/analysis/rules/): a session that fires it and a near neighbour that must
not. The table is checked against the registry, so a new code without cases fails here."""

import json

import pytest

from mcptap.analysis.rules import load
from tests.support.sessions import codes, err, handshake, http, modern, note, ok, req

H = handshake()
H0325 = handshake("2025-03-26")
D = {"resultType": "complete"}
TOKEN = {"name": "slow", "_meta": {"progressToken": "t"}}


# Streamable HTTP, 2025-11-25: initialize answered with session id S1, then initialized
V = "2025-11-25"
H25 = handshake(V)
SESSION = {"mcp_session_id": "S1", "protocol_version": V}
HS = [({"assigned_session": "S1", "response_type": "text/event-stream"}, H25[:2]), (SESSION, [H25[2]])]
LIST = [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]


# a tool that declares its output: {"n": integer}, required
TYPED = [("c2s", req(1, "tools/list")),
         ("s2c", ok(1, {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {
             "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]}))]


def over_http(fields, messages=LIST):
    """The handshake over HTTP, then one more exchange with these fields."""
    return http(*HS, (fields, messages))


def progress(value, token="t"):
    return note("notifications/progress", {"progressToken": token, "progress": value})


def cancel(target):
    return note("notifications/cancelled", {"requestId": target})


# behind OAuth: the initialize POST refused 401 (a Bearer challenge), the authorization flow's
# exchanges (stored by role, no frames), then the handshake again with a token and a request
PRM_URL = "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"
CHALLENGE = f'Bearer error="invalid_token", resource_metadata="{PRM_URL}"'
AUTHORIZE = "http://127.0.0.1:2/authorize?response_type=code&client_id=c&code_challenge=x&state=s"
RESOURCE = "resource=http%3A%2F%2F127.0.0.1%3A1%2Fmcp"


def behind_oauth(*flow, challenge=CHALLENGE, version=V, refused=None):
    """`flow`: (role, url, other fields) of each exchange of the authorization flow."""
    h = handshake(version)
    headers = json.dumps([["WWW-Authenticate", challenge]] if challenge else [])
    refusal = {"status": 401, "role": "auth-challenge" if challenge else "http-error", "response_headers": headers,
               "response_type": "application/json", **(refused or {})}
    steps = [(refusal, [h[0]])]
    steps += [({"method": "GET", "status": 200, "role": role, "url": url, **more}, []) for role, url, more in flow]
    sid = {"mcp_session_id": "S1", "protocol_version": version}
    steps += [({"assigned_session": "S1", "response_type": "text/event-stream"}, h[:2]), (sid, [h[2]]), (sid, LIST)]
    return http(*steps)


def with_headers(**named):
    return {"request_headers": json.dumps([["Host", "127.0.0.1:1"], *([n, v] for n, v in named.items())])}


# code: (frames that fire it, a near neighbour that must not)
CASES = {
    # envelope
    "parse-error": (H + [("s2c", "server ready")], H + [("s2c", note("notifications/tools/list_changed"))]),
    "stdout-noise": (H + [("s2c", "server ready")], H + [("c2s", "client junk")]),
    "frame-truncated": (H + [("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"xx', 4 << 20)],
                        H + [("s2c", '{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"xx')]),
    "duplicate-key": (H + [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":2}}'), ("s2c", ok(1))],
                      H + [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"b":2}}'), ("s2c", ok(1))]),
    "not-an-object": (H + [("c2s", "42")], H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "batch-used": (H + [("c2s", f"[{req(1, 'ping')}]"), ("s2c", err(None))], H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "empty-batch": (H + [("c2s", "[]")], H + [("c2s", "[[]]")]),
    "bad-jsonrpc-version": (H + [("c2s", '{"jsonrpc":"1.0","id":1,"method":"ping"}')],
                            H + [("c2s", '{"jsonrpc":"2.0","id":1,"method":"ping"}'), ("s2c", ok(1))]),
    "method-not-string": (H + [("c2s", '{"jsonrpc":"2.0","id":1,"method":5}')], H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "params-not-structured": (H + [("c2s", req(1, "ping", "x"))], H + [("c2s", req(1, "ping", {})), ("s2c", ok(1))]),
    "params-not-object": (H + [("c2s", req(1, "tools/list", [1])), ("s2c", ok(1, {"tools": []}))],
                          H + [("c2s", req(1, "tools/list", {})), ("s2c", ok(1, {"tools": []}))]),
    "id-invalid-type": (H + [("c2s", req(True, "ping"))], H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "id-null": (H + [("c2s", req(None, "ping")), ("s2c", ok(None))], H + [("c2s", req(0, "ping")), ("s2c", ok(0))]),
    "id-fractional": (H + [("c2s", '{"jsonrpc":"2.0","id":1.5,"method":"ping"}'), ("s2c", '{"jsonrpc":"2.0","id":1.5,"result":{}}')],
                      H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "result-and-error": (H + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}')],
                         H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "no-result-or-error": (H + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","id":1}')],
                           H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "response-without-id": (H + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","result":{}}')],
                            H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "error-object-invalid": (H + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}')],
                             H + [("c2s", req(1, "ping")), ("s2c", err(1))]),
    # pairing
    "unknown-response-id": (H + [("s2c", ok(42))], H + [("c2s", req(42, "ping")), ("s2c", ok(42))]),
    "id-type-mismatch": (H + [("c2s", req(7, "ping")), ("s2c", ok("7"))], H + [("c2s", req(7, "ping")), ("s2c", ok(7))]),
    "duplicate-response": (H + [("c2s", req(1, "ping")), ("s2c", ok(1)), ("s2c", ok(1))],
                           H + [("c2s", req(1, "ping")), ("s2c", ok(1))]),
    "missing-response": (H + [("c2s", req(1, "tools/list"))], H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]),
    "duplicate-request-id": (H + [("c2s", req(1, "ping")), ("c2s", req(1, "ping")), ("s2c", ok(1))],
                             H + [("c2s", req(1, "ping")), ("c2s", req(2, "ping")), ("s2c", ok(1)), ("s2c", ok(2))]),
    "request-id-reused": (H + [("c2s", req(1, "ping")), ("s2c", ok(1)), ("c2s", req(1, "ping")), ("s2c", ok(1))],
                          [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], **D})),
                           ("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], **D}))]),
    "error-id-null-with-known-id": (H + [("c2s", req(5, "tools/call", {"name": 3})), ("s2c", err(None, -32602))],
                                    H + [("c2s", "not json"), ("s2c", err(None, -32700))]),
    "response-to-notification": (H + [("c2s", note("notifications/roots/list_changed")), ("s2c", err(None, -32601))],
                                 H + [("c2s", note("notifications/roots/list_changed"))]),
    "batch-response-shape": (H0325 + [("c2s", f"[{req(1, 'ping')},{req(2, 'ping')}]"), ("s2c", ok(1)), ("s2c", ok(2))],
                             H0325 + [("c2s", f"[{req(1, 'ping')},{req(2, 'ping')}]"), ("s2c", f"[{ok(2)},{ok(1)}]")]),
    # lifecycle
    "initialize-not-first": ([("c2s", req(9, "ping")), ("s2c", ok(9))] + H, H + [("c2s", req(9, "ping")), ("s2c", ok(9))]),
    "request-before-initialize": ([H[0], ("c2s", req(1, "tools/list")), H[1], H[2], ("s2c", ok(1, {"tools": []}))],
                                  [H[0], ("c2s", req(1, "ping")), H[1], H[2], ("s2c", ok(1))]),
    "initialized-missing": (H[:2] + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))],
                            H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]),
    "protocol-version-unsupported": ([H[0], ("s2c", ok(0, {"protocolVersion": "2099-01-01", "capabilities": {},
                                                          "serverInfo": {"name": "s", "version": "1"}})), H[2]], H),
    "initialize-cancelled": ([H[0], ("c2s", cancel(0)), H[1], H[2]],
                             H + [("c2s", req(1, "tools/call", {"name": "x"})), ("c2s", cancel(1))]),
    "revision-unknown": ([("c2s", req(1, "ping")), ("s2c", ok(1))], H),
    "modern-meta-missing": ([("c2s", modern(1, "server/discover")), ("s2c", ok(1, D)),
                             ("c2s", req(2, "tools/list", {})), ("s2c", ok(2, {"tools": [], **D}))],
                            [("c2s", modern(1, "server/discover")), ("s2c", ok(1, D)),
                             ("c2s", modern(2, "tools/list")), ("s2c", ok(2, {"tools": [], **D}))]),
    "result-type-invalid": ([("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], "resultType": "partial"}))],
                            [("c2s", modern(1, "tools/list")), ("s2c", ok(1, {"tools": [], "resultType": "input_required"}))]),
    # methods
    "unknown-method": (H + [("c2s", req(1, "tools/frobnicate")), ("s2c", err(1, -32601))],
                       H + [("c2s", req(1, "com.example/frobnicate")), ("s2c", err(1, -32601))]),
    "wrong-direction": (H + [("s2c", req(1, "tools/list")), ("c2s", err(1, -32601))],
                        H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]),
    "notification-as-request": (H + [("c2s", req(1, "notifications/roots/list_changed")), ("s2c", err(1, -32601))],
                                H + [("c2s", note("notifications/roots/list_changed"))]),
    "request-as-notification": (H + [("c2s", note("tools/list"))], H + [("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]),
    "capability-not-negotiated": (handshake(server_caps={"tools": {}}) + [("c2s", req(1, "prompts/list")), ("s2c", ok(1, {"prompts": []}))],
                                  handshake(server_caps={"prompts": {}}) + [("c2s", req(1, "prompts/list")), ("s2c", ok(1, {"prompts": []}))]),
    "cancel-unknown-request": (H + [("c2s", cancel(77))], H + [("c2s", req(77, "tools/call", {"name": "x"})), ("c2s", cancel(77))]),
    "response-after-cancel": (H + [("c2s", req(5, "tools/call", {"name": "x"})), ("c2s", cancel(5)), ("s2c", ok(5, {"content": []}))],
                              H + [("c2s", req(5, "tools/call", {"name": "x"})), ("s2c", ok(5, {"content": []})), ("c2s", cancel(5))]),
    "progress-unknown-token": (H + [("s2c", progress(1))],
                               H + [("c2s", req(1, "tools/call", TOKEN)), ("s2c", progress(1)), ("s2c", ok(1, {"content": []}))]),
    # transport
    "session-id-missing": (over_http({"protocol_version": V}), over_http(SESSION)),
    "session-id-mismatch": (over_http({"mcp_session_id": "S2", "protocol_version": V}), over_http(SESSION)),
    "protocol-version-header-missing": (over_http({"mcp_session_id": "S1"}), over_http(SESSION)),
    "protocol-version-header-mismatch": (over_http({**SESSION, "protocol_version": "2025-06-18"}), over_http(SESSION)),
    "bad-content-type": (over_http({**SESSION, "response_type": "text/plain"}),
                         over_http({**SESSION, "response_type": "text/event-stream"})),
    "notification-not-accepted": (http(HS[0], ({**SESSION, "status": 200}, [H25[2]])), http(*HS)),
    "dns-rebinding-unprotected": (over_http({**SESSION, **with_headers(Origin="http://evil.example")}),
                                  over_http({**SESSION, **with_headers(Origin="http://localhost:6274")})),
    # tools
    "tool-error-as-jsonrpc-error": (H + [("c2s", req(1, "tools/call", {"name": "x"})),
                                         ("s2c", err(1, -32603, "disk full while writing the report"))],
                                    H + [("c2s", req(1, "tools/call", {"name": "x"})),
                                         ("s2c", err(1, -32603, "Unknown tool: x"))]),
    # authorization
    "auth-challenge-missing": (behind_oauth(challenge=None), behind_oauth()),
    "auth-resource-metadata-missing": (behind_oauth(challenge='Bearer error="invalid_token"', version="2025-06-18"),
                                       behind_oauth(version="2025-06-18")),
    "auth-token-in-query": (over_http({**SESSION, "url": "http://127.0.0.1:1/mcp?access_token=[redacted:0123456789abcdef]"}),
                            over_http({**SESSION, "url": "http://127.0.0.1:1/mcp?tenant=a"})),
    "auth-resource-missing": (behind_oauth(("auth-authorize", AUTHORIZE, {"status": 302})),
                              behind_oauth(("auth-authorize", f"{AUTHORIZE}&{RESOURCE}", {"status": 302}))),
    "auth-server-insecure": (behind_oauth(("auth-discovery", "http://auth.example.com/.well-known/oauth-authorization-server", {})),
                             behind_oauth(("auth-discovery", "https://auth.example.com/.well-known/oauth-authorization-server", {}))),
    "schema-violation": (H + [("c2s", req(1, "tools/call", {"arguments": {}})), ("s2c", ok(1, {"content": []}))],
                         H + [("c2s", req(1, "tools/call", {"name": "t", "arguments": {}, "_meta": {"x.y/z": 1}})),
                              ("s2c", ok(1, {"content": [{"type": "text", "text": "a", "x-vendor": 1}], "x-vendor": 2}))]),
    "structured-content-mismatch": (H + TYPED + [("c2s", req(2, "tools/call", {"name": "t"})),
                                                 ("s2c", ok(2, {"content": [], "structuredContent": {"n": "x"}}))],
                                    H + TYPED + [("c2s", req(2, "tools/call", {"name": "t"})),
                                                 ("s2c", ok(2, {"content": [], "structuredContent": {"n": "x"},
                                                                "isError": True}))]),
    "progress-not-increasing": (H + [("c2s", req(1, "tools/call", TOKEN)), ("s2c", progress(2)), ("s2c", progress(2)),
                                     ("s2c", ok(1, {"content": []}))],
                                H + [("c2s", req(1, "tools/call", TOKEN)), ("s2c", progress(1)), ("s2c", progress(2)),
                                     ("s2c", ok(1, {"content": []}))]),
}


def test_every_registered_finding_code_has_a_firing_case_and_a_neighbour():
    from tests.analysis.test_declared import CASES as DEFINITION_CASES
    from tests.analysis.test_extensions import CASES as EXTENSION_CASES
    from tests.analysis.test_modern_http_rules import ALL_CODES as MODERN_HTTP_CODES
    from tests.analysis.test_logical_operations import CASES as OPERATION_CASES
    from tests.analysis.test_security import CASES as SECURITY_CASES

    assert set(load()) == set(CASES) | set(DEFINITION_CASES) | set(OPERATION_CASES) | set(EXTENSION_CASES) \
        | MODERN_HTTP_CODES | set(SECURITY_CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_finding_code_fires_on_its_example(code):
    assert code in codes(CASES[code][0])


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_finding_codes_near_neighbour_does_not_fire_it(code):
    assert code not in codes(CASES[code][1])


@pytest.mark.parametrize("code", sorted(CASES))
def test_every_rule_names_its_spec_reference_and_summary(code):
    rule = load()[code]
    assert rule.ref and rule.summary and rule.group


def _register(**overrides):
    from mcptap.analysis.rules.registry import RULES, rule

    fields = {"group": "pairing", "severity": "error", "ref": "test", "summary": "test", "on": ["response"],
              "when": ["unknown"]} | overrides
    try:
        rule("test-only-code", **fields)(lambda msg, s: None)
    finally:
        RULES.pop("test-only-code", None)


def test_a_check_on_messages_or_frames_must_name_declared_facts_and_the_others_none():
    _register()  # a response check on a declared fact registers
    for bad in ({"when": None}, {"when": []}, {"when": ["no-such-fact"]}, {"on": ["end"], "when": ["unknown"]},
                {"on": ["response", "end"]}, {"on": ["envelope"], "when": ["unknown"]}):
        with pytest.raises(ValueError):
            _register(**bad)
    _register(on=["exchange"], when=None)  # runs on every exchange


def test_every_rule_subscribes_only_to_declared_facts_and_message_checks_to_some():
    from mcptap.analysis.rules import FACTS, SUBSCRIBED_EVENTS

    for code, r in load().items():
        if set(r.on) & SUBSCRIBED_EVENTS:
            assert r.when and r.when <= FACTS.keys(), code
        else:
            assert r.when is None, code
