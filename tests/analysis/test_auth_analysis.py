"""The analysis of sessions behind OAuth (MCP basic/authorization) and the judgements beside it:
a request refused 401/403 is answered by that refusal and its retry is the request; the
authorization rules by revision where the wire shows it; a downgrade the lifecycle allows; a
result without an id; a loopback server's answer to a foreign Origin. Shapes as the SDKs put
them on the wire (tests/e2e/test_oauth.py has the same on real traffic)."""

import json

from tests.analysis.test_rules import (AUTHORIZE, LIST, RESOURCE, SESSION, V, behind_oauth, over_http, with_headers)
from tests.support.sessions import analyze, codes, handshake, http, ok, req

FLOW = [("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp",
         {"response_body": json.dumps({"resource": "http://127.0.0.1:1/mcp",
                                       "authorization_servers": ["http://127.0.0.1:2/"]})}),
        ("auth-discovery", "http://127.0.0.1:2/.well-known/oauth-authorization-server", {}),
        ("auth-register", "http://127.0.0.1:2/register", {"method": "POST", "status": 201}),
        ("auth-authorize", f"{AUTHORIZE}&{RESOURCE}", {"status": 302}),
        ("auth-token", "http://127.0.0.1:2/token",
         {"method": "POST", "request_body": f"grant_type=authorization_code&code=[redacted:0123456789abcdef]&{RESOURCE}"})]


def test_a_conformant_flow_behind_oauth_has_no_finding_and_its_retry_is_paired_with_its_answer():
    for version in ("2025-06-18", "2025-11-25"):
        analysis, rows, findings = analyze(behind_oauth(*FLOW, version=version))
        assert findings == []
        refused = next(r for r in rows if r[1] == 1)
        retried = next(r for r in rows if r[1] == 2)
        assert refused[4] == retried[4] == "request" and refused[7] is None  # answered by the 401, not a frame
        assert retried[7] == 3  # the retry is paired with the InitializeResult


def test_a_refused_request_that_is_never_sent_again_is_not_missing_its_response():
    refusal = {"status": 403, "role": "auth-challenge", "response_headers": "[]"}
    session = http(*[(f, m) for f, m in [({"assigned_session": "S1", "response_type": "text/event-stream"},
                                         handshake(V)[:2]), (SESSION, [handshake(V)[2]])]],
                   ({**SESSION, **refusal}, [("c2s", req(1, "tools/call", {"name": "x"}))]))
    assert codes(session) == []


def test_a_token_request_without_resource_is_found_and_the_authorization_servers_metadata_is_not_judged_as_json_rpc():
    no_resource = [(r, u, {**m, "request_body": "grant_type=refresh_token&refresh_token=[redacted:0123456789abcdef]"})
                   if r == "auth-token" else (r, u, m) for r, u, m in FLOW]
    assert codes(behind_oauth(*no_resource)) == ["auth-resource-missing"]
    assert codes(behind_oauth(*no_resource, version="2025-03-26")) == []  # no resource parameter before 2025-06-18


def test_from_2025_11_25_a_challenge_without_resource_metadata_is_wrong_only_when_the_well_known_metadata_is_missing():
    bare = 'Bearer error="invalid_token"'
    assert codes(behind_oauth(*FLOW, challenge=bare)) == []
    missing = ("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", {"status": 404})
    assert codes(behind_oauth(missing, challenge=bare)) == ["auth-resource-metadata-missing"]


def test_a_flow_of_2025_03_26s_shape_is_judged_by_2025_03_26_whatever_revision_the_session_negotiated():
    bare = 'Bearer error="invalid_token"'
    missing = ("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", {"status": 404})
    at_origin = ("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-authorization-server", {})
    defaults = [("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-authorization-server", {"status": 404}),
                ("auth-register", "http://127.0.0.1:1/register", {"method": "POST", "status": 201}),
                ("auth-authorize", "http://127.0.0.1:1/authorize?response_type=code&client_id=c", {"status": 302}),
                ("auth-token", "http://127.0.0.1:1/token",
                 {"method": "POST", "request_body": "grant_type=authorization_code&code=[redacted:0123456789abcdef]"})]
    elsewhere = ("auth-discovery", "http://127.0.0.1:2/.well-known/oauth-authorization-server", {})
    for version in ("2025-06-18", "2025-11-25"):
        assert codes(behind_oauth(missing, at_origin, challenge=bare, version=version)) == []  # metadata at the origin
        assert codes(behind_oauth(missing, *defaults, challenge=bare, version=version)) == []  # the default endpoints
        assert codes(behind_oauth(missing, elsewhere, challenge=bare, version=version)) == [
            "auth-resource-metadata-missing"]  # another origin: nothing told the client where, the later flow


def test_an_authorization_server_on_loopback_over_http_is_fine_and_one_elsewhere_named_by_the_metadata_is_not():
    assert "auth-server-insecure" not in codes(behind_oauth(*FLOW))
    elsewhere = ("auth-discovery", "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp",
                 {"response_body": json.dumps({"resource": "x", "authorization_servers": ["http://auth.example.com"]})})
    assert codes(behind_oauth(elsewhere)) == ["auth-server-insecure"]


def test_a_downgrade_the_lifecycle_allows_is_no_finding_and_an_unasked_newer_version_still_is():
    def negotiated(asked, answered):
        h = handshake(asked)
        answer = ("s2c", ok(0, {"protocolVersion": answered, "capabilities": {"tools": {}},
                                "serverInfo": {"name": "s", "version": "1"}}))
        return [h[0], answer, h[2], ("c2s", req(1, "tools/list")), ("s2c", ok(1, {"tools": []}))]
    assert "protocol-version-unsupported" not in codes(negotiated("2025-11-25", "2025-06-18"))
    assert "protocol-version-unsupported" in codes(negotiated("2025-06-18", "2025-11-25"))


def test_a_result_without_an_id_is_an_error_in_every_revision_and_an_error_without_one_is_info_in_2025_11_25():
    h = handshake("2025-11-25")
    result = analyze(h + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","result":{}}')])[2]
    error = analyze(h + [("c2s", req(1, "ping")), ("s2c", '{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"}}')])[2]
    assert [(f[3], f[4]) for f in result if f[3] == "response-without-id"] == [("response-without-id", "error")]
    assert [(f[3], f[4]) for f in error if f[3] == "response-without-id"] == [("response-without-id", "info")]


def test_a_foreign_origin_refused_or_reaching_a_server_that_is_not_on_loopback_is_no_rebinding_finding():
    foreign = with_headers(Origin="http://evil.example")
    assert "dns-rebinding-unprotected" not in codes(over_http({**SESSION, **foreign, "status": 403}, [LIST[0]]))
    assert "dns-rebinding-unprotected" not in codes(over_http({**SESSION, **foreign, "url": "https://mcp.example.com/mcp"}))
    assert "dns-rebinding-unprotected" in codes(over_http({**SESSION, **with_headers(Origin="null")}))
