"""Servers behind OAuth, on real traffic: the `mcp` SDK's OAuth client (mcp.client.auth.OAuthClientProvider:
RFC 9728 discovery from the 401 challenge, RFC 8414 metadata, dynamic client registration, PKCE,
the authorization redirect completed headlessly, the token request, the same request sent again
with its token) against the SDK's authorization server and an SDK server that requires its tokens
(tests/tools/sdk_oauth_server.py), through `mcptap proxy` (reverse: the protected-resource
metadata and the challenge rewritten to name the proxy) and through mitmdump with the addon
(explicit proxy: every exchange passes, nothing rewritten). Both eras: the initialize handshake
and 2026-07-28."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess

import pytest

from tests.conftest import assert_no_false_findings, mcptap, run, tool
from tests.support.http_helpers import mcptap_proxy, mitmdump
from tests.support.inprocess import cli
from tests.support.oauth import assert_no_token_in_clear, exchanges, found_codes, running_oauth_server
from tests.support.oauth import oauth_server  # noqa: F401  (a fixture, one server for the module)

MODES = ["legacy", "auto"]


def oauth_client(sdk_python: str, mode: str, url: str, proxy: str | None = None) -> dict:
    done = subprocess.run([sdk_python, tool("sdk_oauth_client.py"), mode, url, *([proxy] if proxy else [])],
                          capture_output=True, timeout=90)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_oauth_client_completes_its_flow_through_mcptap_proxy_which_rewrites_only_what_names_the_server(
        sdk_python, oauth_server, tmp_path, mode):
    _, rs = oauth_server
    db = tmp_path / "rec.db"
    with mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = oauth_client(sdk_python, mode, f"{proxy.url}/mcp")
    assert out["echo"] == "behind oauth" and out["tools"] == ["echo"]
    rows = exchanges(db)
    assert len({r["session_id"] for r in rows}) == 1 and None not in {r["session_id"] for r in rows}
    challenge = next(r for r in rows if r["status"] == 401)
    assert challenge["role"] == "auth-challenge" and "invalid_token" in challenge["response_body"]
    stored_challenge = dict((n.lower(), v) for n, v in json.loads(challenge["response_headers"]))["www-authenticate"]
    assert f'resource_metadata="{rs}/.well-known/oauth-protected-resource/mcp"' in stored_challenge  # as it came
    [(where, name, upstream, client)] = json.loads(challenge["rewritten"])
    assert (where, name, upstream) == ("header", "WWW-Authenticate", stored_challenge)
    assert client == upstream.replace(rs, proxy.url)
    [prm] = [r for r in rows if r["role"] == "auth-discovery"]
    assert json.loads(prm["response_body"])["resource"] == f"{rs}/mcp"  # the stored bytes: the upstream's
    [(where, name, upstream, client)] = json.loads(prm["rewritten"])
    assert (where, name, upstream) == ("body", "resource", prm["response_body"])
    assert json.loads(client) == {**json.loads(upstream), "resource": f"{proxy.url}/mcp"}  # nothing else changed
    assert all(r["rewritten"] is None for r in rows if r not in (challenge, prm))
    assert_no_token_in_clear(db)
    assert_no_false_findings(db)


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_oauth_client_through_mitmdump_with_the_addon_has_every_exchange_of_its_flow_stored_in_its_session(
        sdk_python, oauth_server, tmp_path, mode):
    auth_server, rs = oauth_server
    db = tmp_path / "rec.db"
    addon = cli("addon-path").stdout.decode().strip()
    with mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
        out = oauth_client(sdk_python, mode, f"{rs}/mcp", f"http://127.0.0.1:{proxy['port']}")
    assert proxy["status"] == 0, proxy["errors"]
    assert out["echo"] == "behind oauth"
    rows = exchanges(db)
    assert len({r["session_id"] for r in rows}) == 1 and None not in {r["session_id"] for r in rows}
    roles = [r["role"] for r in rows if r["role"]]
    assert roles == ["auth-challenge", "auth-discovery", "auth-discovery", "auth-register", "auth-authorize",
                     "auth-token"], roles
    assert all(r["rewritten"] is None for r in rows)  # a forward proxy rewrites nothing
    token = next(r for r in rows if r["role"] == "auth-token")
    assert token["url"] == f"{auth_server}/token"
    redacted = json.loads(token["redacted"])
    assert {"body:code", "body:code_verifier", "response:body:access_token", "response:body:refresh_token"} <= set(redacted)
    authorize = next(r for r in rows if r["role"] == "auth-authorize")
    location = dict((n.lower(), v) for n, v in json.loads(authorize["response_headers"]))["location"]
    code = re.search(r"code=(\[redacted:[0-9a-f]{16}\])", location.replace("%5B", "[").replace("%5D", "]")).group(1)
    assert code in token["request_body"].replace("%5B", "[").replace("%5D", "]")  # the same code, told apart
    assert_no_token_in_clear(db)
    assert_no_false_findings(db)
    session = rows[0]["session_id"]
    shown = cli("show", "--db", str(db), session)
    assert shown.returncode == 0, shown.stderr
    lines = [line.split() for line in shown.stdout.decode().splitlines()]
    assert [words[3] for words in lines if len(words) > 3 and words[1] == "http"] == roles
    document = json.loads(cli("show", "--db", str(db), session, "--format", "json").stdout)
    assert [e["role"] for e in document["session"]["exchanges"]] == roles
    from mcptap import data

    assert sorted(data.exchanges(str(db))["role"].dropna()) == sorted(roles)
    report = tmp_path / "report.html"
    assert cli("report", "--db", str(db), "-o", str(report)).returncode == 0
    assert "auth-token" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize("url", ["ftp://mcp.example.com", "https://mcp.example.com/mcp", "not a url"])
def test_a_public_url_that_is_not_an_origin_is_one_line_and_exit_2(tmp_path, url):
    done = cli("proxy", "--db", str(tmp_path / "rec.db"), "--upstream", "http://127.0.0.1:9/mcp",
                      "--listen", "127.0.0.1:0", "--public-url", url)
    assert done.returncode == 2 and len(done.stderr.decode().strip().splitlines()) == 1, done.stderr
    assert b"--public-url" in done.stderr


@pytest.mark.parametrize("fault, expected", [("no-challenge", {"auth-challenge-missing"}),
                                             ("bare-challenge", set()),
                                             ("old-revision", {"auth-resource-metadata-missing"})])
def test_a_planted_challenge_fault_of_a_real_server_is_found_and_its_allowed_neighbour_is_not(
        sdk_python, tmp_path, fault, expected):
    db = tmp_path / "rec.db"
    with running_oauth_server(sdk_python, fault) as (_, rs), mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = oauth_client(sdk_python, "legacy", f"{proxy.url}/mcp")  # the well-known metadata still leads it
    assert out["echo"] == "behind oauth"
    assert found_codes(db) == expected


@pytest.mark.parametrize("fault, expected", [("open-origin", {"dns-rebinding-unprotected"}), ("guarded-origin", set())])
def test_a_loopback_server_that_serves_a_foreign_origin_is_found_and_one_that_refuses_it_is_not(
        sdk_python, tmp_path, fault, expected):
    import urllib.error
    import urllib.request

    db = tmp_path / "rec.db"
    addon = cli("addon-path").stdout.decode().strip()
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}}).encode()
    with running_oauth_server(sdk_python, fault) as (_, rs), \
            mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy['port']}"}))
        request = urllib.request.Request(f"{rs}/mcp", data=body, headers={
            "Origin": "http://evil.example", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        with contextlib.suppress(urllib.error.HTTPError):
            opener.open(request, timeout=30).read()
    assert found_codes(db) == expected


@pytest.mark.parametrize("mode", MODES)
def test_metadata_a_challenge_names_outside_the_well_known_path_is_rewritten_and_stored_as_discovery(
        sdk_python, tmp_path, mode):
    db = tmp_path / "rec.db"
    with running_oauth_server(sdk_python, "custom-metadata") as (_, rs), mcptap_proxy(db, f"{rs}/mcp") as proxy:
        out = oauth_client(sdk_python, mode, f"{proxy.url}/mcp")  # refused unless the resource names the proxy
    assert out["echo"] == "behind oauth"
    rows = exchanges(db)
    [prm] = [r for r in rows if r["url"].endswith("/oauth/resource-metadata")]
    assert prm["role"] == "auth-discovery" and prm["status"] == 200
    stored = prm["response_body"]
    assert '"resource": "http:\\/\\/127.0.0.1' in stored  # the upstream's bytes, as PHP writes them
    [(where, name, upstream, client)] = json.loads(prm["rewritten"])
    assert (where, name, upstream) == ("body", "resource", stored)
    assert client == stored.replace(f'"resource": "{rs}/mcp"'.replace("/", "\\/"),
                                    f'"resource": "{proxy.url}/mcp"'.replace("/", "\\/"))  # that member alone
    assert json.loads(client)["resource_documentation"] == f"{rs}/mcp"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM frames WHERE exchange_id = ?", (prm["id"],)).fetchone() == (0,)
    conn.close()
    assert len({r["session_id"] for r in rows}) == 1
    assert_no_false_findings(db)


def test_metadata_a_challenge_names_outside_the_well_known_path_is_discovery_through_mitmdump_too(sdk_python, tmp_path):
    db = tmp_path / "rec.db"
    addon = cli("addon-path").stdout.decode().strip()
    with running_oauth_server(sdk_python, "custom-metadata") as (_, rs), \
            mitmdump("regular", "-s", addon, "--set", f"mcptap_db={db}") as proxy:
        out = oauth_client(sdk_python, "legacy", f"{rs}/mcp", f"http://127.0.0.1:{proxy['port']}")
    assert proxy["status"] == 0, proxy["errors"]
    assert out["echo"] == "behind oauth"
    rows = exchanges(db)
    [prm] = [r for r in rows if r["url"] == f"{rs}/oauth/resource-metadata"]
    assert prm["role"] == "auth-discovery" and prm["rewritten"] is None  # a forward proxy rewrites nothing
    assert json.loads(prm["response_body"])["resource"] == f"{rs}/mcp"
    assert len({r["session_id"] for r in rows}) == 1
    assert_no_false_findings(db)
