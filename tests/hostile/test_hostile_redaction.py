"""Issue 15, item 7: redaction reaches every place a secret can land. A real stdio server (on the
`mcp` SDK, tests/tools/leaky_server.py) is recorded through the tee: it takes secrets on its
command line (`--api-key X`, `--header "Authorization: Bearer X"`, `GITHUB_TOKEN=X` given to
`env`), prints them on its stderr, and is sent tool calls whose arguments and answers hold
credential members, also inside strings that hold JSON. A real HTTP server is recorded through
`mcptap proxy` and through a real `mitmdump -w` (imported afterwards), sent secrets in the URL
(`key=`, `jwt=`), in `Referer` and in `X-Mcp-Key`. The same sessions recorded with `--no-redact`
are exported and imported, and cleaned by `mcptap redact`; a session whose database cannot be
made goes to a spool, redacted as well. Every time, no secret is left anywhere
in the database's files (the file and its write-ahead log), while what is no secret (MCP
protocol members, a JSON Schema's `password` property) is stored as it came."""

from __future__ import annotations

import glob
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mcptap.redaction import MASKED
from tests.conftest import mcptap, rows, tool
from tests.support.http_helpers import mcptap_proxy, mitmdump_reverse, sdk_http_server
from tests.support.inprocess import cli

ANSWER_S = 30  # the longest wait for one answer of the stdio server

# Each secret is a distinct string, so that a leak says where it came from.
CMD_API_KEY = "cmdline-apikey-5d1f0"
CMD_BEARER = "cmdline-bearer-8e2a7"
ENV_TOKEN = "env-githubtoken-71c3"
ERR_PASSWORD = "stderr-dbpassword-3c9"
TEXT_PASSWORD = "jsontext-password-4b6"
MEMBER_SECRETS = {"token": "member-token-a1", "api-key": "member-apikey-b2", "x-api-key": "member-xapikey-c3",
                  "accessToken": "member-accesstoken-d4", "clientSecret": "member-clientsecret-e5",
                  "private_key": "member-privatekey-f6", "bearer": "member-bearer-g7"}
STDIO_SECRETS = [CMD_API_KEY, CMD_BEARER, ENV_TOKEN, ERR_PASSWORD, TEXT_PASSWORD, *MEMBER_SECRETS.values()]

QUERY_KEY = "query-key-8c1e5"
QUERY_JWT = "query-jwt-2d7b9"
REFERER_TOKEN = "referer-token-1e9a2"
MCP_KEY = "header-mcpkey-6a3f4"
HTTP_TEXT_PASSWORD = "http-jsontext-password-5a8"
HTTP_SECRETS = [QUERY_KEY, QUERY_JWT, REFERER_TOKEN, MCP_KEY, HTTP_TEXT_PASSWORD]

PROGRESS_TOKEN = "progress-tok-9f1"  # protocol members: never redacted
CURSOR = "cursor-page-2"


def files_bytes(db: Path) -> bytes:
    """Every file of the database: the file, its write-ahead log, its shared memory."""
    data = b""
    for path in glob.glob(f"{db}*"):
        with open(path, "rb") as fh:
            data += fh.read()
    return data


def leaks(db: Path, secrets: list[str]) -> list[str]:
    data = files_bytes(db)
    return [s for s in secrets if s.encode() in data]


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    return result


# -- the stdio server through the tee ----------------------------------------------------------------

def _requests() -> list[dict]:
    meta_call = {"name": "echo", "arguments": {"text": "hello"}, "_meta": {"progressToken": PROGRESS_TOKEN}}
    text = json.dumps({"user": "ann", "password": TEXT_PASSWORD})
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "redaction-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": CURSOR}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": meta_call},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "configure",
                                                                       "arguments": {"settings": MEMBER_SECRETS}}},
    ]


def record_stdio(db: Path, sdk_python: str, *flags: str) -> dict[int, dict]:
    """Run the leaky server through `mcptap record`, send it _requests() one by one (each once the
    answer before it came), close its stdin; the answers by id."""
    argv = mcptap("record", "--db", str(db), *flags, "--", "env", f"GITHUB_TOKEN={ENV_TOKEN}", sdk_python,
                  tool("leaky_server.py"), "--api-key", CMD_API_KEY, "--header", f"Authorization: Bearer {CMD_BEARER}",
                  f"--db-password={ERR_PASSWORD}")
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()
    answers: dict[int, dict] = {}
    try:
        for message in _requests():
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            while "id" in message and message["id"] not in answers:
                answer = json.loads(lines.get(timeout=ANSWER_S))
                answers[answer.get("id")] = answer
        proc.stdin.close()
        assert proc.wait(ANSWER_S) == 0, proc.stderr.read().decode(errors="replace")[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
    return answers


@pytest.fixture(scope="module")
def stdio_dbs(tmp_path_factory, sdk_python) -> dict[str, Path]:
    """The leaky session recorded twice: redacted (the default) and with --no-redact."""
    folder = tmp_path_factory.mktemp("stdio")
    dbs = {"redacted": folder / "redacted.db", "kept": folder / "kept.db"}
    with ThreadPoolExecutor(2) as pool:  # two sessions at once
        redacted = pool.submit(record_stdio, dbs["redacted"], sdk_python)
        kept = pool.submit(record_stdio, dbs["kept"], sdk_python, "--no-redact")
        answers = redacted.result()
        kept.result()
    assert answers[4]["result"]["content"][0]["text"] == json.dumps({"user": "ann", "password": TEXT_PASSWORD})
    assert leaks(dbs["kept"], STDIO_SECRETS) == STDIO_SECRETS  # each secret was there to be found
    return dbs


def assert_stdio_session_clean(db: Path) -> None:
    """No secret, and each place still says what it said, with stand-ins for the secrets."""
    assert leaks(db, STDIO_SECRETS) == []
    (command,) = rows(db, "SELECT command FROM sessions")
    argv = json.loads(command[0])
    assert argv[0] == "env" and argv[argv.index("--api-key") + 1].startswith("[redacted:")
    assert argv[argv.index("--header") + 1].startswith("Authorization: Bearer [redacted:")
    assert argv[1].startswith("GITHUB_TOKEN=[redacted:") and argv[-1].startswith("--db-password=[redacted:")
    stderr = b"\n".join(bytes(raw) for (raw,) in rows(db, "SELECT CAST(raw AS BLOB) FROM stderr_lines ORDER BY seq"))
    assert b"upstream request headers: Authorization: Bearer [redacted:" in stderr
    assert b"using api_key=[redacted:" in stderr and b"and GITHUB_TOKEN=[redacted:" in stderr
    (log_line,) = [line for line in stderr.splitlines() if line.startswith(b"{")]
    assert MASKED.fullmatch(json.loads(log_line)["password"])  # a JSON log line stays JSON
    for raw, size, redacted in rows(db, "SELECT CAST(raw AS BLOB), size, redacted FROM frames"):
        assert size == len(raw)  # the size of what is stored
        message = json.loads(raw)  # every frame stays valid JSON
        if redacted and "|" in redacted:  # a string holding JSON: redacted inside, still a string holding JSON
            holder = message.get("params", message.get("result"))
            text = holder["arguments"]["text"] if "arguments" in holder else holder["content"][0]["text"]
            inner = json.loads(text)
            assert inner["user"] == "ann" and MASKED.fullmatch(inner["password"])


def test_the_tee_stores_no_secret_of_the_command_line_stderr_or_frames(stdio_dbs):
    assert_stdio_session_clean(stdio_dbs["redacted"])
    paths = [json.loads(r) for (r,) in rows(stdio_dbs["redacted"], "SELECT redacted FROM frames WHERE redacted IS NOT NULL "
                                                                    "ORDER BY seq")]
    assert ["$.params.arguments.text|$.password"] in paths  # the request ...
    assert ["$.result.content[0].text|$.password", "$.result.structuredContent.result|$.password"] in paths  # the answer
    assert [f"$.params.arguments.settings.{name}" for name in MEMBER_SECRETS] in paths


def test_protocol_members_and_schemas_recorded_through_the_tee_are_stored_as_they_came(stdio_dbs):
    by_seq = {}
    for name, db in stdio_dbs.items():
        by_seq[name] = dict(rows(db, "SELECT seq, CAST(raw AS BLOB) FROM frames"))
    kept, redacted = by_seq["kept"], by_seq["redacted"]
    protocol = [seq for seq, raw in kept.items() if PROGRESS_TOKEN.encode() in raw or CURSOR.encode() in raw
                or b'"inputSchema"' in raw]
    assert len(protocol) == 3  # the call with a progress token, tools/list with a cursor, and its answer
    assert all(redacted[seq] == kept[seq] for seq in protocol)
    (schema,) = [raw for raw in redacted.values() if b'"inputSchema"' in raw]
    assert b'"password":{"title":"Password","type":"string"}' in schema


def test_import_of_a_frame_log_written_without_redaction_stores_no_secret(stdio_dbs, tmp_path):
    log = tmp_path / "kept.jsonl"
    ok(cli("export", "--db", str(stdio_dbs["kept"]), "-o", str(log)))
    assert CMD_API_KEY.encode() in log.read_bytes() and ERR_PASSWORD.encode() in log.read_bytes()
    db = tmp_path / "imported.db"
    ok(cli("import", "--db", str(db), str(log)))
    assert_stdio_session_clean(db)


def test_mcptap_redact_of_a_stdio_recording_without_redaction_leaves_no_secret(stdio_dbs, tmp_path):
    db = tmp_path / "kept.db"
    shutil.copy(stdio_dbs["kept"], db)
    result = ok(cli("redact", "--db", str(db)))
    assert "3 stderr lines and 1 command lines" in result.stdout.decode()
    assert_stdio_session_clean(db)


# -- the HTTP server through the proxy and through mitmdump ----------------------------------------

def post(base: str, ident: int, arguments: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {
        "name": "echo", "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    request = urllib.request.Request(f"{base}/mcp?key={QUERY_KEY}&jwt={QUERY_JWT}", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo",
        "X-Mcp-Key": MCP_KEY, "Referer": f"http://127.0.0.1/app?token={REFERER_TOKEN}&page=2"})
    try:
        return urllib.request.urlopen(request, timeout=10).read()
    except urllib.error.HTTPError as exc:
        return exc.read()


def send_http(base: str) -> None:
    text = json.dumps({"user": "ann", "password": HTTP_TEXT_PASSWORD})
    assert text.encode() in post(base, 1, {"text": text}).replace(b'\\"', b'"')  # the wire carried it as it was
    assert b"plain" in post(base, 2, {"text": "plain"})


@pytest.fixture(scope="module")
def http_captures(tmp_path_factory, sdk_python) -> dict[str, Path]:
    """One real HTTP server, sent the same requests through `mcptap proxy` and through a real
    `mitmdump -w`: the proxy's database and the dump."""
    folder = tmp_path_factory.mktemp("http")
    out = {"proxy": folder / "proxy.db", "dump": folder / "flows.mitm"}
    def through_proxy(upstream: str) -> None:
        with mcptap_proxy(out["proxy"], upstream) as proxy:
            send_http(proxy.url)
            assert proxy.stop() == 0, proxy.errors

    def through_mitmdump(upstream: str) -> None:
        with mitmdump_reverse(upstream, "-w", str(out["dump"])) as mitm:
            send_http(f"http://127.0.0.1:{mitm['port']}")
        assert mitm["status"] == 0, mitm["errors"]

    with sdk_http_server(sdk_python, "json") as upstream, ThreadPoolExecutor(2) as pool:  # both at once
        for done in [pool.submit(through_proxy, upstream), pool.submit(through_mitmdump, upstream)]:
            done.result()
    assert all(s.encode() in out["dump"].read_bytes() for s in HTTP_SECRETS)  # each secret was there to be found
    return out


def assert_http_session_clean(db: Path) -> None:
    assert leaks(db, HTTP_SECRETS) == []
    exchanges = rows(db, "SELECT url, request_headers, redacted FROM exchanges WHERE method = 'POST'")
    assert len(exchanges) == 2
    for url, headers, redacted in exchanges:
        assert "key=%5Bredacted%3A" in url or "key=[redacted:" in url
        fields = {name.lower(): value for name, value in json.loads(headers)}
        assert MASKED.fullmatch(fields["x-mcp-key"]) and "page=2" in fields["referer"]
        assert {"x-mcp-key", "referer", "query:key", "query:jwt"} <= set(json.loads(redacted))
    (answer,) = [json.loads(raw) for (raw,) in rows(db, "SELECT CAST(raw AS BLOB) FROM frames WHERE direction = 's2c'")
                 if b"password" in raw]
    assert MASKED.fullmatch(json.loads(answer["result"]["content"][0]["text"])["password"])


def test_the_proxy_stores_no_secret_of_urls_headers_or_json_inside_strings(http_captures):
    assert_http_session_clean(http_captures["proxy"])


def test_import_of_a_mitmdump_dump_stores_no_secret(http_captures, tmp_path):
    db = tmp_path / "dump.db"
    ok(cli("import", "--db", str(db), str(http_captures["dump"])))
    assert_http_session_clean(db)


def test_mcptap_redact_of_a_dump_imported_without_redaction_leaves_no_secret(http_captures, tmp_path):
    db = tmp_path / "dump-kept.db"
    ok(cli("import", "--db", str(db), "--no-redact", str(http_captures["dump"])))
    assert leaks(db, HTTP_SECRETS) == HTTP_SECRETS
    ok(cli("redact", "--db", str(db)))
    assert_http_session_clean(db)


def test_a_spool_holds_no_secret_of_the_command_line_or_stderr(tmp_path):
    """The database cannot be made: the session goes to a spool in the temp folder, redacted too."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "*.spool.jsonl")))
    script = 'echo "login password=spool-stderr-pw-1" >&2; cat'
    result = cli("record", "--db", str(blocker / "rec.db"), "--", "sh", "-c", script, "sh", "--api-key",
                        "spool-cmdline-key-2", input=b'{"jsonrpc":"2.0","method":"x"}\n')
    assert result.returncode == 0 and b"spool-stderr-pw-1" in result.stderr  # the wire is never touched
    (spool,) = set(glob.glob(os.path.join(tempfile.gettempdir(), "*.spool.jsonl"))) - before
    try:
        with open(spool, "rb") as fh:
            text = fh.read()
        assert b"spool-stderr-pw-1" not in text and b"spool-cmdline-key-2" not in text
        assert b"password=[redacted:" in text and b'"--api-key","[redacted:' in text  # the command as a list
    finally:
        os.unlink(spool)
