"""Secrets out of recordings (docs/contract.md, Redaction): credential members of frames (also
inside strings that hold JSON), credential HTTP headers and URLs, and the secrets of free text
(stderr lines, command lines) replaced by a stable keyed hash at capture (tee, proxy, spool), at
import, and by `mcptap redact`; nothing else changes (protocol members, schemas, token counts are
never touched), and each frame lists what was replaced. The places end to end, with real
servers: tests/hostile/test_hostile_redaction.py."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import sqlite3
import tempfile
import urllib.error
import urllib.request

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcptap.redaction import CREDENTIAL_KEYS, MASKED, FrameRedactor, Redaction, Redactor
from tests.conftest import frames, mcptap, run, tee, tool
from tests.support.http_helpers import mcptap_proxy, sdk_http_server
from tests.support.inprocess import cli
from tests.support.sessions import write_log

KEY = b"test-key"


def redactor(**kw) -> FrameRedactor:
    return FrameRedactor(Redaction(**kw), masker=Redactor(KEY))


def mask(secret: str) -> str:
    return Redactor(KEY).mask(secret)


def files_bytes(db) -> bytes:
    """Every file of the database: the file, its write-ahead log, its shared memory."""
    data = b""
    for path in glob.glob(f"{db}*"):
        with open(path, "rb") as fh:
            data += fh.read()
    return data


# -- the frame redactor -----------------------------------------------------------------------------

def test_credential_members_are_replaced_and_every_other_byte_is_kept():
    raw = (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"login", "arguments":'
           b'{"user":"ann","password":"hunter2","nested":{"API_KEY":"k-1"},"apiKey":"k-2"}}}')
    out, paths = redactor().frame(raw)
    assert paths == ["$.params.arguments.password", "$.params.arguments.nested.API_KEY", "$.params.arguments.apiKey"]
    assert out == raw.replace(b'"hunter2"', json.dumps(mask("hunter2")).encode()) \
        .replace(b'"k-1"', json.dumps(mask("k-1")).encode()).replace(b'"k-2"', json.dumps(mask("k-2")).encode())


def test_a_frame_without_credentials_is_returned_as_the_same_bytes():
    raw = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"the password is in the vault"}]}}'
    out, paths = redactor().frame(raw)
    assert out is raw and paths is None


@pytest.mark.parametrize("member", ["progressToken", "cursor", "nextCursor", "requestId", "protocolVersion"])
def test_protocol_members_are_never_redacted_even_by_a_broad_user_pattern(member):
    raw = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"%s":"tok-1","_meta":{"%s":"tok-2"}}}' % (
        member.encode(), member.encode())
    out, paths = redactor(keys=("*tok*", "*cursor*", "*id*", "*version*")).frame(raw)
    assert out == raw and paths is None


def test_a_json_schema_property_named_password_is_not_a_credential():
    raw = b'{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"login","inputSchema":{"properties":{"password":{"type":"string"}}}}]}}'
    assert redactor().frame(raw) == (raw, None)


def test_null_and_boolean_values_carry_nothing_to_hide():
    raw = b'{"password":null,"secret":true}'
    assert redactor().frame(raw) == (raw, None)


def test_a_number_is_redacted_as_its_text_and_an_authorization_keeps_its_scheme():
    out, paths = redactor().frame(b'{"api_key":12345,"Authorization":"Bearer abc"}')
    assert json.loads(out) == {"api_key": mask("12345"), "Authorization": f"Bearer {mask('abc')}"}
    assert paths == ["$.api_key", "$.Authorization"]


def test_the_same_secret_gives_the_same_hash_and_another_secret_another():
    out, _ = redactor().frame(b'[{"password":"a"},{"secret":"a"},{"passwd":"b"}]')
    first, second, third = (next(iter(d.values())) for d in json.loads(out))
    assert first == second != third and MASKED.fullmatch(first)


def test_redacting_a_redacted_frame_changes_nothing():
    once, _ = redactor().frame(b'{"password":"hunter2","authorization":"Basic Zm9v"}')
    twice, _ = redactor().frame(once)
    assert twice == once


def test_a_member_name_written_with_escapes_is_still_found():
    out, paths = redactor().frame(b'{"pass\\u0077ord":"hunter2"}')
    assert b"hunter2" not in out and paths == ["$.password"]


def test_text_that_is_not_json_still_loses_its_credential_members():
    out, paths = redactor().frame(b'debug: sent {"password": "hunter2", "user": "ann"} and more')
    assert b"hunter2" not in out and b'"user": "ann"} and more' in out and paths == ["$..password"]


def test_bytes_that_are_not_utf8_elsewhere_in_the_frame_are_kept():
    raw = b'{"note":"\xff\xfe","password":"hunter2"}'
    out, _ = redactor().frame(raw)
    assert out.startswith(b'{"note":"\xff\xfe","password":"[redacted:')


def test_user_keys_and_json_paths_are_redacted_too_and_a_path_may_name_a_whole_object():
    raw = b'{"params":{"arguments":{"dsn":{"host":"db","pw":"x"},"gh_token":"t","other":1}}}'
    out, paths = redactor(keys=("*_TOKEN",), paths=("$.params.arguments.dsn",)).frame(raw)
    assert paths == ["$.params.arguments.dsn", "$.params.arguments.gh_token"]
    value = json.loads(out)["params"]["arguments"]
    assert MASKED.fullmatch(value["dsn"]) and MASKED.fullmatch(value["gh_token"]) and value["other"] == 1


def test_a_lone_surrogate_secret_is_masked_without_an_error():
    out, paths = redactor().frame(b'{"password":"\\ud800"}')
    assert paths == ["$.password"] and MASKED.fullmatch(json.loads(out)["password"])


def test_a_frame_missing_a_comma_still_loses_its_credential():
    out, paths = redactor().frame(b'{"id":1 "password":"hunter2"}')
    assert b"hunter2" not in out and paths == ["$..password"]


def test_a_string_cut_off_stays_cut_off_when_masked():
    out, _ = redactor().frame(b'{"password":"hunter2')
    assert b"hunter2" not in out and out.startswith(b'{"password":"[redacted:') and not out.endswith(b'"')


def test_a_user_path_with_letters_beyond_ascii_is_found_written_plain_or_escaped():
    r = redactor(paths=("$.params.PASSÉ",))
    for raw in ('{"params":{"PASSÉ":"x1"}}'.encode(), b'{"params":{"PASS\\u00c9":"x1"}}'):
        out, paths = r.frame(raw)
        assert b"x1" not in out and paths == ["$.params.PASSÉ"], raw


def test_no_redact_keeps_everything():
    raw = b'{"password":"hunter2"}'
    assert FrameRedactor(Redaction(keep=True)).frame(raw) == (raw, None)


@pytest.mark.parametrize("name", ["token", "api-key", "x-api-key", "accessToken", "clientSecret", "private_key", "bearer",
                                  "X-Mcp-Key", "API_KEY", "Proxy-Authorization", "refreshToken", "secretAccessKey"])
def test_the_contracts_credential_names_are_redacted_in_any_case_and_spelling(name):
    raw = b'{"params":{"arguments":{"%s":"s3cr3t-value","user":"ann"}}}' % name.encode()
    out, paths = redactor().frame(raw)
    assert paths == [f"$.params.arguments.{name}"] and b"s3cr3t-value" not in out
    assert out == raw.replace(b'"s3cr3t-value"', json.dumps(mask("s3cr3t-value")).encode())


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":1}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"tok-2"}}}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"page-2-token"}}',
    b'{"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"next-token"}}',
    b'{"jsonrpc":"2.0","id":3,"result":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"content":[]}}',
    b'{"jsonrpc":"2.0","id":4,"result":{"model":"m","usage":{"tokens":120,"inputTokens":100,"outputTokens":20,'
    b'"total_tokens":120,"max_tokens":4096}}}',
    b'{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":100}}',
    b'{"jsonrpc":"2.0","id":6,"result":{"tools":[{"name":"login","inputSchema":{"type":"object","properties":'
    b'{"password":{"type":"string"},"token":{"type":"string"},"api_key":{"type":"string","format":"password"}},'
    b'"required":["password","token"]}}]}}',
    b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\\"properties\\":{\\"password\\":{\\"type\\":'
    b'\\"string\\"}},\\"tokens\\":5}"}]}}',
], ids=["progressToken", "_meta.progressToken", "cursor", "nextCursor", "_meta", "usage tokens", "maxTokens",
        "a schema with a password property", "a schema inside a string"])
def test_mcp_protocol_members_schemas_and_token_counts_are_never_touched(raw):
    assert redactor().frame(raw) == (raw, None)
    assert redactor().text(raw) == (raw, None)


def test_a_string_holding_json_is_redacted_inside_and_stays_a_string_holding_json():
    inner = {"user": "ann", "password": "hunter2", "note": "café ✓ </tag>"}
    text = json.dumps(inner)  # \u00e9 escapes, as Python writes them
    raw = (b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":%s}],"structuredContent":{"result":%s}}}'
           % (json.dumps(text).encode(), json.dumps(text, ensure_ascii=False).replace("/", "\\/").encode()))
    out, paths = redactor().frame(raw)
    assert paths == ["$.result.content[0].text|$.password", "$.result.structuredContent.result|$.password"]
    masked = json.dumps(mask("hunter2")).encode()
    assert out == raw.replace(b'\\"hunter2\\"', masked.replace(b'"', b'\\"'))  # every other byte kept
    result = json.loads(out)["result"]
    for holder in (result["content"][0]["text"], result["structuredContent"]["result"]):
        assert json.loads(holder) == dict(inner, password=mask("hunter2"))


def test_json_inside_json_inside_a_string_is_redacted_at_every_depth():
    level2 = json.dumps({"secret": "deep-one"})
    level1 = json.dumps({"payload": level2, "api_key": "shallow-one"})
    raw = json.dumps({"text": level1}).encode()
    out, paths = redactor().frame(raw)
    assert paths == ["$.text|$.payload|$.secret", "$.text|$.api_key"]
    again = json.loads(json.loads(out)["text"])
    assert again["api_key"] == mask("shallow-one") and json.loads(again["payload"]) == {"secret": mask("deep-one")}


@pytest.mark.parametrize("line, kept", [
    (b'{"level":"debug","msg":"config","password":"s3cr3t-1"}', b'{"level":"debug","msg":"config","password":"[redacted:'),
    (b"upstream request headers: Authorization: Bearer s3cr3t-1", b"Authorization: Bearer [redacted:"),
    (b"curl -H 'authorization: Basic s3cr3t-1' http://h/", b"'authorization: Basic [redacted:"),
    (b"starting with --api-key s3cr3t-1 --verbose", b"--api-key [redacted:"),
    (b"starting with --api-key=s3cr3t-1 --verbose", b"--api-key=[redacted:"),
    (b"env OPENAI_API_KEY=s3cr3t-1 GITHUB_TOKEN=s3cr3t-1 npx server", b"OPENAI_API_KEY=[redacted:"),
    (b"login password=s3cr3t-1&user=ann", b"password=[redacted:"),
    (b"settings {'client_secret': 's3cr3t-1', 'debug': True}", b"'client_secret': '[redacted:"),
    (b'token: "s3cr3t-1"', b'token: "[redacted:'),
    (b"got Bearer s3cr3t-1-long-enough from the cache", b"Bearer [redacted:"),
    (b"connecting to postgresql://ann:s3cr3t-1@db:5432/x", b"postgresql://ann:[redacted:"),
    (b"GET https://h/v1?key=s3cr3t-1&q=mcp", b"?key=[redacted:"),
    (b'sent "{\\"password\\": \\"s3cr3t-1\\"}" to the server', b'{\\"password\\": \\"[redacted:'),
    (b'{"msg":"retrying with token=s3cr3t-1"}', b'{"msg":"retrying with token=[redacted:'),
], ids=["json log line", "Authorization header", "another scheme", "--name value", "--name=value", "NAME=VALUE",
        "query-like", "python repr", "quoted", "bare Bearer", "url password", "url key", "escaped json",
        "inside a json log line's string"])
def test_a_secret_in_a_line_of_free_text_is_replaced_and_the_line_kept(line, kept):
    out, found = redactor().text(line)
    assert b"s3cr3t-1" not in out and kept in out and found
    if line.startswith(b"{"):
        json.loads(out)  # a JSON log line stays JSON


@pytest.mark.parametrize("line", [
    b"progressToken: 5, cursor: abc, nextCursor: def", b"max_tokens=100 total_tokens: 12 --max-tokens 50",
    b"the token expired; password reset sent", b"--password-file /run/secret --no-token --tokenizer gpt",
    b'tool schema {"password": {"type": "string"}, "token": null, "secret": true}', b"Bearer of bad news",
    b"key=value in a sentence, monkey=1", b"https://example.com/docs?page=2&q=token",
])
def test_free_text_without_a_secret_is_left_alone(line):
    assert redactor().text(line) == (line, None)


def test_a_command_line_loses_its_secrets_and_keeps_its_shape():
    argv = ["env", "GITHUB_TOKEN=ghp-1", "npx", "server", "--api-key", "sk-2", "--token=t-3", "-e", "DB_PASSWORD=pw-4",
            "--header", "Authorization: Bearer b-5", "postgresql://u:pw-6@h/db", "--config", '{"apiKey": "k-7"}',
            "--password-file", "/run/pw", "--verbose", "--secret", "--model", "m"]
    out, found = redactor().command(argv)
    assert not any(s in " ".join(out) for s in ("ghp-1", "sk-2", "t-3", "pw-4", "b-5", "pw-6", "k-7"))
    assert [out[i] for i in (0, 2, 3, 4)] == ["env", "npx", "server", "--api-key"] and out[5] == mask("sk-2") and out[6] == "--token=" + mask("t-3")
    assert out[1] == "GITHUB_TOKEN=" + mask("ghp-1") and out[10] == "Authorization: Bearer " + mask("b-5")
    assert json.loads(out[13]) == {"apiKey": mask("k-7")} and out[14:] == argv[14:]  # --secret --model: not a value
    assert redactor().command_text(json.dumps(argv)) == json.dumps(out)
    assert redactor(keep=True).command(argv) == (argv, [])


@pytest.mark.parametrize("name, value, stored", [
    ("X-Mcp-Key", "k-1", mask("k-1")),
    ("Referer", "http://h/app?token=t-1&page=2", f"http://h/app?token={mask('t-1')}&page=2"),
    ("Location", "http://h/cb?code=c-1", f"http://h/cb?code={mask('c-1')}"),
    ("X-Forwarded-Authorization", "Bearer b-1", f"Bearer {mask('b-1')}"),
    ("X-Upstream-Auth-Header", "Bearer b-2", f"Bearer {mask('b-2')}"),
    ("Referer", "http://h/app?page=2", None),
    ("User-Agent", "mcp-client/1", None),
])
def test_credential_headers_and_urls_in_headers_are_redacted(name, value, stored):
    assert Redactor(KEY).header_value(name, value) == stored


def test_key_and_jwt_query_parameters_are_redacted():
    url, redacted = Redactor(KEY).url("http://h/mcp?key=k-1&jwt=j-1&page=2")
    assert url == f"http://h/mcp?key={mask('k-1')}&jwt={mask('j-1')}&page=2"
    assert redacted == ["query:key", "query:jwt"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


def credential(name: str) -> bool:
    """The contract's rule: a credential name in any case, its words together or apart by `_`, `-`, `.`."""
    return name.isascii() and any(re.fullmatch("[-_.]?".join(n.split("_")), name.lower()) for n in CREDENTIAL_KEYS)


def masked_document(v):
    """What the redactor should make of a parsed document: credential strings and numbers masked."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            secret = credential(k) and isinstance(x, (str, int)) and not isinstance(x, bool)
            if secret and isinstance(x, str) and k.lower().endswith("authorization") and " " in x.strip() \
                    and x.split(None, 1)[0].replace(".", "").replace("-", "").isalnum():
                scheme, rest = x.split(None, 1)
                out[k] = x if MASKED.fullmatch(rest) else f"{scheme} {mask(rest)}"
            elif secret:
                out[k] = x if isinstance(x, str) and MASKED.fullmatch(x) else mask(x if isinstance(x, str) else str(x))
            else:
                out[k] = masked_document(x)
        return out
    if isinstance(v, list):
        return [masked_document(x) for x in v]
    return v


@settings(max_examples=300, deadline=None)
@given(_JSON, st.sampled_from(["password", "Secret", "access_token"]), st.text(alphabet="abcxyz019", min_size=1, max_size=12))
def test_any_json_keeps_its_shape_and_only_credential_values_change(value, name, secret):
    document = {"data": value, "creds": {name: secret}}
    out, paths = redactor().frame(json.dumps(document).encode())
    assert json.loads(out) == masked_document(document)
    assert f"$.creds.{name}" in paths


_PIECES = ['"password"', '"Secret"', '"api_key"', '"x"', '"pass\\u0077ord"', ":", ",", " ", "\t", "\f", "\n", "{", "}",
           "[", "]", "true", "TRUE", "null", "nullx", "false", "12", "-1", "NaN", '"s3cr3t"', '"', "\\",
           # the names the contract added, and the same inside a string that holds JSON
           '"token"', '"X-Api-Key"', '"accessToken"', '"bearer"', '"private_key"', '"progressToken"', '"tokens"',
           '\\"', '\\"token\\"', '\\"pass\\\\u0077ord\\"', "\\u0022", "\\n", '\\\\\\"', '\\"s3\\"', '"{\\"secret\\":\\"v\\"}"', "token"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=24))
@example(['"', "\\u0022", "token", "\\u0022", ":", "12", '"'])  # a name quoted by escapes inside a string
@example(['"', "{", '\\"pass\\\\u0077ord\\"', ":", '\\"s3\\"', "}", '"'])  # ... and written with escapes
@example(['"', "{", '\\"token\\"', "\\n", ":", '\\"s3\\"', "}", '"'])  # ... and an escaped newline before its colon
def test_a_frame_the_precheck_passes_over_holds_nothing_the_scan_would_replace(pieces):
    """The cheap look (might_hold) may only leave out frames in which the token scan, or the scan
    of text that is not JSON, finds no value to replace (inside strings that hold JSON too)."""
    raw = "".join(pieces).encode()
    r = redactor()
    if not r.might_hold(raw):
        assert r._apply(raw, False) == (raw, None), raw


# -- at capture, at import, and afterwards ----------------------------------------------------------

def test_a_password_tool_argument_recorded_through_the_tee_is_replaced_and_listed(tmp_path, db, sdk_python):
    chain = shlex.join(tee(db, sdk_python, tool("sdk_http_server.py"), "stdio"))
    result = run([sdk_python, tool("sdk_http_client.py"), "legacy", "stdio", chain, "login"], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert json.loads(result.stdout)["login"] == "welcome ann"  # the wire carried the password
    assert b"hunter2-pw" not in files_bytes(db)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT CAST(raw AS BLOB), redacted FROM frames WHERE redacted IS NOT NULL").fetchall()
    conn.close()
    assert len(rows) == 2 and all(json.loads(r) == ["$.params.arguments.password"] for _, r in rows)
    first, second = (json.loads(raw)["params"]["arguments"]["password"] for raw, _ in rows)
    assert first == second and MASKED.fullmatch(first)
    (schema,) = [f for f in frames(db, "s2c") if b'"inputSchema"' in f]
    assert b'"password":{' in schema  # tools/list's schema names the argument: kept as it was


def test_a_secret_in_a_header_and_in_a_tool_argument_appears_nowhere_in_the_database(tmp_path, sdk_python):
    db = tmp_path / "secret.db"
    with sdk_http_server(sdk_python, "json") as upstream, mcptap_proxy(db, upstream) as proxy:
        for ident in (1, 2):  # the same secrets twice
            body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {
                "name": "login", "arguments": {"user": "ann", "password": "hunter2-in-body"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
            request = urllib.request.Request(proxy.url + "/mcp", data=body, method="POST", headers={
                "Authorization": "Bearer hunter2-in-header", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call", "Mcp-Name": "login"})
            try:
                answer = urllib.request.urlopen(request, timeout=10).read()
            except urllib.error.HTTPError as exc:
                answer = exc.read()
            assert b"welcome ann" in answer, answer
        assert proxy.stop() == 0, proxy.errors
    data = files_bytes(db)
    assert b"hunter2-in-body" not in data and b"hunter2-in-header" not in data
    conn = sqlite3.connect(db)
    bodies = conn.execute("SELECT CAST(raw AS BLOB), redacted FROM frames WHERE direction = 'c2s' ORDER BY seq").fetchall()
    headers = [json.loads(h) for (h,) in conn.execute("SELECT request_headers FROM exchanges ORDER BY started_at")]
    conn.close()
    passwords = {json.loads(raw)["params"]["arguments"]["password"] for raw, _ in bodies}
    assert len(bodies) == 2 and len(passwords) == 1 and MASKED.fullmatch(passwords.pop())
    assert all(json.loads(r) == ["$.params.arguments.password"] for _, r in bodies)
    tokens = {dict(map(tuple, h))["Authorization"] for h in headers}
    assert len(tokens) == 1 and tokens.pop().startswith("Bearer [redacted:")


def test_no_redact_records_the_frame_as_it_was(db):
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"kept"}}'
    result = cli("record", "--db", str(db), "--no-redact", "--", "cat", input=line + b"\n")
    assert result.returncode == 0
    assert frames(db, "c2s") == [line]


def test_extra_keys_and_paths_given_to_record_are_redacted(db):
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"dsn":"pg://u:p@h","gh_token":"t0k"}}'
    result = cli("record", "--db", str(db), "--redact-key", "*_token", "--redact-path", "$.params.dsn", "--",
                        "cat", input=line + b"\n")
    assert result.returncode == 0 and result.stdout == line + b"\n"  # the wire is never touched
    (stored,) = frames(db, "c2s")
    assert b"pg://" not in stored and b"t0k" not in stored


def test_a_spooled_frame_is_redacted_like_a_stored_one(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "*.spool.jsonl")))
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"spooled-secret"}}'
    result = run(tee(blocker / "rec.db", "cat"), input=line + b"\n")
    assert result.returncode == 0 and result.stdout == line + b"\n"
    (spool,) = set(glob.glob(os.path.join(tempfile.gettempdir(), "*.spool.jsonl"))) - before
    try:
        with open(spool, "rb") as fh:
            text = fh.read()
        assert b"spooled-secret" not in text and b'"redacted":["$.params.password"]' in text
        good = tmp_path / "good.db"
        assert cli("import", "--db", str(good), spool).returncode == 0
        conn = sqlite3.connect(good)
        assert conn.execute("SELECT redacted FROM frames WHERE direction = 'c2s'").fetchone() == ('["$.params.password"]',)
        conn.close()
    finally:
        os.unlink(spool)


def test_import_redacts_unless_told_not_to(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(log, [("c2s", '{"jsonrpc":"2.0","id":1,"method":"x","params":{"client_secret":"imported-secret"}}')], "s1", start=1.0)
    redacted, kept = tmp_path / "r.db", tmp_path / "k.db"
    assert cli("import", "--db", str(redacted), str(log)).returncode == 0
    assert cli("import", "--db", str(kept), "--no-redact", str(log)).returncode == 0
    assert b"imported-secret" not in files_bytes(redacted)
    assert frames(kept) == [b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"client_secret":"imported-secret"}}']


def test_mcptap_redact_rewrites_a_file_recorded_without_redaction_and_leaves_no_trace(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(log, [("c2s", '{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"old-secret","dsn":"pg://old"}}')], "s1", start=1.0)
    db = tmp_path / "old.db"
    assert cli("import", "--db", str(db), "--no-redact", str(log)).returncode == 0
    assert cli("analyze", "--db", str(db)).returncode in (0, 1)
    assert b"old-secret" in files_bytes(db)
    result = cli("redact", "--db", str(db), "--redact-path", "$.params.dsn")
    assert result.returncode == 0, result.stderr
    assert "redacted 2 members in 1 frames" in result.stdout.decode()
    data = files_bytes(db)
    assert b"old-secret" not in data and b"pg://old" not in data
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT redacted FROM frames").fetchone() == ('["$.params.password", "$.params.dsn"]',)
    assert conn.execute("SELECT count(*) FROM analyses").fetchone() == (0,)  # dropped: analyze writes it again
    conn.close()
    again = cli("redact", "--db", str(db))
    assert again.returncode == 0 and "redacted 0 members" in again.stdout.decode()
    shown = cli("show", "--db", str(db), "s1")
    assert "redacted: $.params.password, $.params.dsn" in shown.stdout.decode()
    import mcptap.data as mt

    assert list(mt.frames(str(db))["redacted"]) == ['["$.params.password", "$.params.dsn"]']


def test_mcptap_redact_with_a_bad_path_or_file_is_a_one_line_error(tmp_path):
    bad = cli("redact", "--db", str(tmp_path / "none.db"), "--redact-path", "$.a[")
    assert bad.returncode == 2 and bad.stderr.decode().count("\n") == 1 and "JSON path" in bad.stderr.decode()
    missing = cli("redact", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "no database" in missing.stderr.decode()


def test_database_and_spool_files_are_private(db):
    assert run(tee(db, "cat"), input=b"{}\n").returncode == 0
    assert os.stat(db).st_mode & 0o077 == 0


def test_a_frame_larger_than_fold_at_has_its_credentials_found_in_any_case_as_a_small_one_does():
    from mcptap.redaction import FOLD_AT, FrameRedactor

    redactor = FrameRedactor(None)
    for pad in (10, FOLD_AT + 10):
        frame = b'{"jsonrpc":"2.0","id":1,"result":{"pad":"' + b"x" * pad + b'","ApiKey":"s3cret","API_TOKEN":7}}'
        stored, paths = redactor.frame(frame)
        assert paths == ["$.result.ApiKey", "$.result.API_TOKEN"] and b"s3cret" not in stored, pad
        schema = frame.replace(b'"s3cret"', b'{"type":"string"}').replace(b":7}", b':{"type":"number"}}')
        assert redactor.frame(schema) == (schema, None), pad  # a schema's property: nothing to replace


def test_the_default_redaction_is_no_arguments_so_record_may_leave_the_module_unimported():
    from mcptap.record import redaction_args
    from mcptap.redaction import Redaction

    assert Redaction().to_args() == [] == redaction_args(False, [], [])
    assert redaction_args(True, [], []) == Redaction.from_options(True, (), ()).to_args() == ["--no-redact"]
