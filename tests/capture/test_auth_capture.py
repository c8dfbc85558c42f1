"""The OAuth part of the HTTP capture, pure (addons/http/auth.py, analyzer/redaction/bodies.py): which
exchanges are the authorization flow's and in which role, what `mcptap proxy` rewrites (the
protected-resource metadata's `resource`, a challenge's `resource_metadata`, and nothing else),
and the credentials of OAuth bodies redacted with correlation kept."""

import json

import pytest

from mcptap.addons.http.auth import Rewriter, challenge_urls, metadata_target, refusal_role, role
from mcptap.redaction import Redactor
from mcptap.redaction.bodies import redact_body

FORM = "application/x-www-form-urlencoded"
UP = "http://127.0.0.1:8000"
PROXY = "http://127.0.0.1:8808"


@pytest.mark.parametrize("method, path, ctype, body, expected", [
    ("GET", "/.well-known/oauth-protected-resource/mcp", None, b"", "auth-discovery"),
    ("GET", "/.well-known/oauth-authorization-server", None, b"", "auth-discovery"),
    ("GET", "/.well-known/openid-configuration/tenant", None, b"", "auth-discovery"),
    ("GET", "/tenant/.well-known/openid-configuration", None, b"", "auth-discovery"),
    ("POST", "/token", FORM, b"grant_type=authorization_code&code=x", "auth-token"),
    ("POST", "/register", "application/json", b'{"redirect_uris": ["http://127.0.0.1/cb"]}', "auth-register"),
    ("GET", "/authorize?response_type=code&client_id=c&state=s", None, b"", "auth-authorize"),
    ("GET", "/index.html", None, b"", None),
    ("POST", "/form", FORM, b"name=x", None),
    ("GET", "/authorize?client_id=c", None, b"", None),
])
def test_an_exchange_of_the_authorization_flow_is_told_by_its_path_and_body(method, path, ctype, body, expected):
    assert role(method, path, ctype, body) == expected


def test_a_refusal_with_a_bearer_challenge_is_an_auth_challenge_and_other_errors_are_http_errors():
    assert refusal_role(401, b'Bearer error="invalid_token"') == "auth-challenge"
    assert refusal_role(401, None) == "http-error"
    assert refusal_role(404, None) == "http-error"
    assert refusal_role(200, None) is None


def test_the_challenges_resource_metadata_is_made_the_proxys_and_the_rest_of_it_kept():
    value = f'Bearer error="invalid_token", resource_metadata="{UP}/.well-known/oauth-protected-resource/mcp", scope="a"'
    assert Rewriter(UP).challenge(value, PROXY) == value.replace(UP, PROXY)
    assert Rewriter(UP).challenge('Bearer error="invalid_token"', PROXY) is None
    other = 'Bearer resource_metadata="https://elsewhere.example/.well-known/oauth-protected-resource"'
    assert Rewriter(UP).challenge(other, PROXY) is None  # names another server: left alone


def test_the_metadata_resource_is_made_the_proxys_byte_for_byte_elsewhere():
    body = f'{{"resource":"{UP}/mcp","authorization_servers":["{UP}/"],"scopes_supported":["mcp"]}}'.encode()
    new = Rewriter(UP).metadata(body, PROXY)
    assert new == body.replace(f'"{UP}/mcp"'.encode(), f'"{PROXY}/mcp"'.encode())
    assert json.loads(new)["authorization_servers"] == [f"{UP}/"]  # a co-hosted server is not the proxy's to name
    assert Rewriter(UP, "https://mcp.example.com").metadata(body, "https://mcp.example.com") is not None
    assert Rewriter(UP).metadata(b'{"resource":"https://other/mcp"}', PROXY) is None
    assert Rewriter(UP).metadata(b"not json", PROXY) is None


ESCAPED, PROXY_ESCAPED = UP.replace("/", "\\/"), PROXY.replace("/", "\\/")


@pytest.mark.parametrize("body, expected", [
    # PHP's json_encode escapes slashes: the value is found, and its new text keeps them escaped
    (f'{{"resource":"{ESCAPED}\\/mcp","scopes_supported":["mcp"]}}',
     f'{{"resource":"{PROXY_ESCAPED}\\/mcp","scopes_supported":["mcp"]}}'),
    # another member holding the same URL, before `resource`: left as it came
    (f'{{"resource_documentation":"{UP}/mcp", "resource" : "{UP}/mcp"}}',
     f'{{"resource_documentation":"{UP}/mcp", "resource" : "{PROXY}/mcp"}}'),
    # the name written with an escape, and a value holding another escape
    (f'{{"reso\\u0075rce":"{UP}/m\\u0063p"}}', f'{{"reso\\u0075rce":"{PROXY}/mcp"}}'),
    # a duplicate name: parsers take the last, so that is the one rewritten
    (f'{{"resource":"https://other/mcp","resource":"{UP}/mcp"}}', f'{{"resource":"https://other/mcp","resource":"{PROXY}/mcp"}}'),
    (f'{{"nested":{{"resource":"{UP}/mcp"}},"resource":"{UP}/mcp"}}', f'{{"nested":{{"resource":"{UP}/mcp"}},"resource":"{PROXY}/mcp"}}'),
])
def test_exactly_the_metadata_resource_member_is_rewritten_whatever_its_escapes(body, expected):
    new = Rewriter(UP).metadata(body.encode(), PROXY)
    assert new == expected.encode()
    assert json.loads(new)["resource"] == f"{PROXY}/mcp"


@pytest.mark.parametrize("body", [
    f'{{"resource":"https://other/mcp","resource_documentation":"{UP}/mcp"}}',  # the same URL, not in `resource`
    f'{{"resource":"{UP}/mcp","resource":"https://other/mcp"}}',  # the last `resource` names another server
    f'{{"nested":{{"resource":"{UP}/mcp"}}}}',  # not a top-level member
    f'{{"resource":"{UP}/mcp"}} trailing',
    f'["{UP}/mcp"]',
])
def test_metadata_whose_resource_member_does_not_name_the_upstream_is_left_alone(body):
    assert Rewriter(UP).metadata(body.encode(), PROXY) is None


def test_the_metadata_a_challenge_names_is_found_wherever_it_is():
    value = 'Bearer error="invalid_token", resource_metadata="HTTP://Example.COM/oauth/metadata?x=1"'
    assert challenge_urls(value) == ["HTTP://Example.COM/oauth/metadata?x=1"]
    assert metadata_target(challenge_urls(value)[0]) == ("http", "example.com", 80, "/oauth/metadata?x=1")
    assert metadata_target("https://example.com") == ("https", "example.com", 443, "/")
    assert metadata_target("http://127.0.0.1:8000/m") == ("http", "127.0.0.1", 8000, "/m")
    assert metadata_target("ftp://example.com/m") is None
    assert metadata_target("http://[::1/m") is None


def test_credentials_in_oauth_form_and_json_bodies_are_redacted_and_the_same_secret_gets_the_same_stand_in():
    r = Redactor(b"key")
    form, redacted = redact_body(r, FORM, b"grant_type=authorization_code&code=C1&code_verifier=V&client_id=c&"
                                           b"resource=http%3A%2F%2Fh%2Fmcp")
    assert "C1" not in form and "=V&" not in form and "client_id=c" in form and "grant_type=authorization_code" in form
    assert redacted == ["body:code", "body:code_verifier"]
    answer, redacted = redact_body(r, "application/json", b'{"access_token": "A", "token_type": "Bearer", '
                                                           b'"refresh_token": "R", "expires_in": 3600}')
    assert json.loads(answer) == {"access_token": r.mask("A"), "token_type": "Bearer", "refresh_token": r.mask("R"),
                                  "expires_in": 3600}
    assert r.mask("C1") in form  # the code of the redirect is found again in the token request
    assert redact_body(Redactor(keep=True), FORM, b"code=C1") == ("code=C1", [])


def test_a_www_authenticate_challenge_is_not_taken_for_a_bearer_token():
    assert Redactor(b"k").header_value("WWW-Authenticate", 'Bearer error="invalid_token"') is None
    assert Redactor(b"k").header_value("Authorization", "Bearer abc").startswith("Bearer [redacted:")
