"""Secrets stay redacted on every path: an OAuth flow against a hostile OAuth-protected server
(tests/tools/hostile_oauth_server.py, one origin) through the real `mcptap proxy`, whose token
answers start with a byte order mark, run past 64 KiB, say `access_token` twice or come in UTF-16,
whose cookies end in `=` or are named `path`, `domain`, `expires`, `max-age`, `samesite`, whose
authorization answer is a `form_post` page, sent an `id_token_hint` and a form starting with a
byte order mark. Recorded with the default redaction, no secret reaches the database or its
write-ahead log, `show`, an export or a bundle; recorded with --no-redact, `mcptap redact`,
`mcptap import` and `mcptap bundle` each leave none. One case a test, so that each says what leaked."""

from __future__ import annotations

import codecs
import http.client
import json
import shutil
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from tests.conftest import mcptap, run, tool
from tests.support.http_helpers import free_port, http_server, mcptap_proxy
from tests.support.oauth import exchanges, stored_bytes
from tests.tools import hostile_oauth_server as hostile

VERIFIER = "VERIFIER-pkce-1a2b3c7d"
ID_TOKEN_HINT = "HINT-idtoken-5e6f7a80"

CASES = {
    "token answer with a byte order mark": list(hostile.token_secrets("bom").values())[:3],
    "token answer over 64 KiB": list(hostile.token_secrets("big").values())[:3],
    "token answer with a duplicate name": list(hostile.token_secrets("dup").values()),
    "token answer in UTF-16": list(hostile.token_secrets("utf16").values())[:3],
    "token request form with a byte order mark": [hostile.REDIRECT_CODE, VERIFIER],
    "registration answer": list(hostile.REGISTRATION.values()),
    "cookie value with base64 padding": [hostile.COOKIES["sid"]],
    "cookies named as Set-Cookie attributes": [v for k, v in hostile.COOKIES.items() if k != "sid"],
    "id_token_hint": [ID_TOKEN_HINT],
    "form_post authorization answer": [hostile.FORM_POST_CODE],
}


def leaked(data: bytes, secrets: list[str]) -> list[str]:
    """The secrets found in `data`, as UTF-8 or as UTF-16 (what a UTF-16 answer's bytes hold)."""
    return [s for s in secrets if s.encode() in data or s.encode("utf-16-le") in data]


class Client:
    """A client of the flow, through the proxy (http.client: no redirect followed)."""

    def __init__(self, base: str):
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)

    def send(self, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> tuple[int, bytes]:
        self.conn.request(method, path, body=body or None, headers=headers or {})
        answer = self.conn.getresponse()
        return answer.status, answer.read()

    def flow(self) -> None:
        rpc = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile-test", "version": "1"}}})
        assert self.send("POST", "/mcp", initialize.encode(), rpc)[0] == 401
        assert self.send("GET", "/.well-known/oauth-protected-resource/mcp")[0] == 200
        assert self.send("GET", "/.well-known/oauth-authorization-server")[0] == 200
        registration = json.dumps({"redirect_uris": ["http://127.0.0.1/cb"], "client_name": "hostile-test"})
        assert self.send("POST", "/register", registration.encode(), {"Content-Type": "application/json"})[0] == 201
        query = {"response_type": "code", "client_id": "hostile-client", "redirect_uri": "http://127.0.0.1/cb",
                 "state": "st-1", "code_challenge": "ch", "code_challenge_method": "S256", "id_token_hint": ID_TOKEN_HINT}
        assert self.send("GET", "/authorize?" + urlencode(query))[0] == 302
        assert self.send("GET", "/authorize?" + urlencode({**query, "response_mode": "form_post"}))[0] == 200
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        grant = urlencode({"code": hostile.REDIRECT_CODE, "grant_type": "authorization_code",
                           "code_verifier": VERIFIER, "client_id": "hostile-client"}).encode()
        for variant in hostile.VARIANTS:
            body = codecs.BOM_UTF8 + grant if variant == "bom" else grant
            assert self.send("POST", f"/token?variant={variant}", body, form)[0] == 200
        authorized = {**rpc, "Authorization": "Bearer " + hostile.token_secrets("plain")["access_token"],
                      "Cookie": "; ".join(f"{k}={v}" for k, v in hostile.COOKIES.items())}
        assert self.send("POST", "/mcp", initialize.encode(), authorized)[0] == 200
        authorized["Mcp-Session-Id"] = "hostile-session-1"
        initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        assert self.send("POST", "/mcp", initialized, authorized)[0] == 202
        listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
        assert self.send("POST", "/mcp", listing, authorized)[0] == 200
        self.conn.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """The flow recorded through `mcptap proxy`: with the default redaction and with --no-redact."""
    folder = tmp_path_factory.mktemp("hostile-oauth")
    port = free_port()
    dbs = {"redacted": folder / "redacted.db", "kept": folder / "kept.db"}
    with http_server([sys.executable, tool("hostile_oauth_server.py"), str(port)], port) as up:
        for name, db in dbs.items():
            flags = ["--no-redact"] if name == "kept" else []
            with mcptap_proxy(db, f"{up}/mcp", *flags) as proxy:
                Client(proxy.url).flow()
            assert proxy.proc.returncode == 0, proxy.errors
    every = [s for secrets in CASES.values() for s in secrets]
    assert leaked(stored_bytes(dbs["kept"]), every) == every  # each was there to be found
    return dbs


def _ok(argv: list[str]) -> bytes:
    done = run(argv)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def cleaned(recorded, tmp_path_factory) -> dict[str, bytes]:
    """What each path leaves of the --no-redact recording: `mcptap redact` of a copy, an import of
    its frame-log and HAR exports, a bundle of it; and what the redacted recording shows."""
    folder = tmp_path_factory.mktemp("cleaned")
    out: dict[str, bytes] = {}
    copy = folder / "redact.db"
    shutil.copy(recorded["kept"], copy)
    said = _ok(mcptap("redact", "--db", str(copy)))
    out["redact"] = stored_bytes(copy) + said
    for fmt in ("jsonl", "har"):
        exported = folder / f"kept.{fmt}"
        _ok(mcptap("export", "--db", str(recorded["kept"]), "--format", fmt, "-o", str(exported)))
        imported = folder / f"imported-{fmt}.db"
        _ok(mcptap("import", "--db", str(imported), str(exported)))
        out[f"import of {fmt}"] = stored_bytes(imported)
    for name, db in recorded.items():
        bundle = folder / f"{name}.zip"
        _ok(mcptap("bundle", "--db", str(db), "-o", str(bundle)))
        with zipfile.ZipFile(bundle) as z:
            out[f"bundle of the {name} recording"] = b"".join(z.read(member) for member in z.namelist())
    db = recorded["redacted"]
    session = exchanges(db)[0]["session_id"]
    out["capture"] = stored_bytes(db)
    out["capture, shown"] = (_ok(mcptap("show", "--db", str(db), session)) +
                             _ok(mcptap("show", "--db", str(db), session, "--format", "json")))
    har = folder / "redacted.har"
    _ok(mcptap("export", "--db", str(db), "--format", "har", "-o", str(har)))
    out["capture, exported"] = har.read_bytes()
    return out


PATHS = ["capture", "capture, shown", "capture, exported", "redact", "import of jsonl", "import of har",
         "bundle of the redacted recording", "bundle of the kept recording"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("path", PATHS)
def test_no_secret_of_a_hostile_oauth_flow_is_left_on_any_path(cleaned, path, case):
    assert leaked(cleaned[path], CASES[case]) == []


def test_the_redacted_flow_still_says_what_was_replaced_and_keeps_what_is_no_secret(recorded):
    rows = {(r["role"], urlsplit(r["url"]).query.partition("variant=")[2]): r for r in exchanges(recorded["redacted"])}
    for variant in ("bom", "big", "dup", "utf16"):
        token = rows[("auth-token", variant)]
        assert {"response:body:access_token", "response:body:refresh_token"} <= set(json.loads(token["redacted"]))
        assert '"token_type": "Bearer"' in token["response_body"]
    dup = rows[("auth-token", "dup")]["response_body"]
    assert dup.count('"access_token": "[redacted:') == 2
    assert "body:code" in json.loads(rows[("auth-token", "bom")]["redacted"])
    page = next(r for r in exchanges(recorded["redacted"]) if r["role"] == "auth-authorize" and r["response_body"])
    assert 'name="code" value="[redacted:' in page["response_body"] and 'name="state" value="st-1"' in page["response_body"]
    mcp = [r for r in exchanges(recorded["redacted"]) if r["role"] is None and r["status"] == 200]
    set_cookies = [v for r in mcp for n, v in json.loads(r["response_headers"]) if n.lower() == "set-cookie"]
    assert set_cookies and all("; Path=/; HttpOnly; SameSite=Lax" in v and "=[redacted:" in v for v in set_cookies)
