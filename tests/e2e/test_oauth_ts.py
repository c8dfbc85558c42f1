"""Servers behind OAuth, with the TypeScript SDK's OAuth client (an OAuthClientProvider as the
StreamableHTTPClientTransport's authProvider: the first connection refused with 401, RFC 9728 and
RFC 8414 discovery, dynamic client registration, PKCE, the authorization redirect completed
headlessly, finishAuth, a new connection with the token; tests/tools/ts_oauth_client.mjs), v1 and v2,
against the same SDK authorization server and MCP server as the Python client
(tests/tools/sdk_oauth_server.py), through `mcptap proxy` and through mitmdump with the addon. Then
the authorization rules' planted faults on real traffic: a client that sends its token in the query,
one that leaves out `resource`, an authorization server on plain http off loopback, and a server
speaking 2025-06-18 whose challenge has no resource_metadata."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import analyze_json, assert_no_false_findings, mcptap, run, tool
from tests.support.http_helpers import mcptap_proxy, mitmdump
from tests.support.npm_servers import npm_tools
from tests.support.oauth import assert_no_token_in_clear, exchanges, found_codes, running_oauth_server
from tests.support.oauth import oauth_server  # noqa: F401  (a fixture, one server for the module)

CLIENTS = [("v1", "legacy"), ("v2", "legacy"), ("v2", "auto")]
ROLES = ["auth-challenge", "auth-discovery", "auth-discovery", "auth-register", "auth-authorize", "auth-token"]


def ts_oauth_client(ts_sdk, sdk: str, mode: str, url: str, proxy: str | None = None, fault: str = "") -> dict:
    node, _ = npm_tools()
    done = subprocess.run([node, tool("ts_oauth_client.mjs"), sdk, mode, url, proxy or "-", *([fault] if fault else [])],
                          capture_output=True, timeout=90, env={**os.environ, "MCPTAP_TS_SDK": str(ts_sdk)})
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def one_session(rows: list[dict]) -> str:
    sessions = {r["session_id"] for r in rows}
    assert len(sessions) == 1 and None not in sessions, sessions
    return sessions.pop()


@pytest.mark.parametrize("sdk, mode", CLIENTS)
def test_the_ts_sdk_oauth_client_completes_its_flow_through_mcptap_proxy_unchanged_and_all_of_it_is_stored(
        sdk_python, ts_sdk, oauth_server, tmp_path, sdk, mode):
    _, rs = oauth_server
    db = tmp_path / "rec.db"
    with mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = ts_oauth_client(ts_sdk, sdk, mode, f"{proxy.url}/mcp")
        assert proxy.stop() == 0, proxy.errors
    assert out["echo"] == "behind oauth" and out["tools"] == ["echo"]
    assert out["protocol_version"] == ("2026-07-28" if mode == "auto" else "2025-11-25")
    rows = exchanges(db)
    one_session(rows)
    challenge = next(r for r in rows if r["status"] == 401)
    assert challenge["role"] == "auth-challenge"
    [(where, name, upstream, client)] = json.loads(challenge["rewritten"])
    assert where == "header" and client == upstream.replace(rs, proxy.url)
    [prm] = [r for r in rows if r["role"] == "auth-discovery"]  # the authorization server is reached directly
    assert json.loads(prm["response_body"])["resource"] == f"{rs}/mcp"
    assert json.loads(json.loads(prm["rewritten"])[0][3])["resource"] == f"{proxy.url}/mcp"
    assert [r["status"] for r in rows if r["role"] is None and r["method"] == "POST"][-1] == 200
    assert_no_token_in_clear(db)
    assert_no_false_findings(db)


@pytest.mark.parametrize("sdk, mode", [("v1", "legacy"), ("v2", "auto")])
def test_the_ts_sdk_oauth_client_through_mitmdump_with_the_addon_has_every_exchange_of_its_flow_in_its_session(
        sdk_python, ts_sdk, oauth_server, tmp_path, sdk, mode):
    auth_server, rs = oauth_server
    db = tmp_path / "rec.db"
    addon = run(mcptap("addon-path")).stdout.decode().strip()
    with mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
        out = ts_oauth_client(ts_sdk, sdk, mode, f"{rs}/mcp", f"http://127.0.0.1:{proxy['port']}")
    assert proxy["status"] == 0, proxy["errors"]
    assert out["echo"] == "behind oauth"
    rows = exchanges(db)
    one_session(rows)
    roles = [r["role"] for r in rows if r["role"]]
    assert roles == ROLES, roles
    assert all(r["rewritten"] is None for r in rows)  # a forward proxy rewrites nothing
    token = next(r for r in rows if r["role"] == "auth-token")
    assert token["url"] == f"{auth_server}/token"
    assert {"body:code", "body:code_verifier", "response:body:access_token",
            "response:body:refresh_token"} <= set(json.loads(token["redacted"]))
    assert_no_token_in_clear(db)
    assert_no_false_findings(db)


def test_a_client_that_sends_its_token_in_the_query_is_found_and_the_token_is_not_stored(
        sdk_python, ts_sdk, oauth_server, tmp_path):
    _, rs = oauth_server
    db = tmp_path / "rec.db"
    with mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = ts_oauth_client(ts_sdk, "v1", "legacy", f"{proxy.url}/mcp", fault="token-in-query")
    assert out["echo"] == "behind oauth"
    assert any("access_token=" in r["url"] for r in exchanges(db))  # the fault reached the wire
    assert_no_token_in_clear(db)
    assert found_codes(db) == {"auth-token-in-query"}


def test_authorization_and_token_requests_without_resource_are_found(sdk_python, ts_sdk, oauth_server, tmp_path):
    _, rs = oauth_server
    db = tmp_path / "rec.db"
    addon = run(mcptap("addon-path")).stdout.decode().strip()
    with mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
        out = ts_oauth_client(ts_sdk, "v1", "legacy", f"{rs}/mcp", f"http://127.0.0.1:{proxy['port']}", "no-resource")
    assert proxy["status"] == 0, proxy["errors"]
    assert out["echo"] == "behind oauth"
    _, report = analyze_json(db)
    loud = sorted((f["code"], f["message"].split(": ")[-1]) for f in report["findings"]
                  if f["severity"] in ("error", "warning"))
    assert [code for code, _ in loud] == ["auth-resource-missing"] * 2, loud  # the authorization and token requests


@pytest.mark.parametrize("fault, expected", [("insecure-issuer", {"auth-server-insecure"}), ("", set())])
def test_protected_resource_metadata_naming_an_authorization_server_on_plain_http_off_loopback_is_found(
        sdk_python, ts_sdk, tmp_path, fault, expected):
    db = tmp_path / "rec.db"
    with running_oauth_server(sdk_python, *([fault] if fault else [])) as (_, rs), \
            mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = ts_oauth_client(ts_sdk, "v1", "legacy", f"{proxy.url}/mcp")  # v1 still sends its code there
    assert out["echo"] == "behind oauth"
    assert found_codes(db) == expected
