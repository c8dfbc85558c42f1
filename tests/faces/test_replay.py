"""`mcptap replay` end to end: sessions recorded from the real `mcp` SDK client and real servers
(mcp-server-time from PyPI, the SDK test server over stdio, Streamable HTTP and legacy SSE),
replayed against live servers, with the exit status and the diff checked."""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
import time

import pytest

from tests.conftest import mcptap, run, tee, tool, wait_for
from tests.support.http_helpers import free_port, mcptap_proxy, sdk_http_server
from tests.support.inprocess import cli

TIME_VOLATILE = ("--ignore-path", "$.result.content[*].text", "--ignore-path", "$..datetime")


def record_time_session(db, sdk_python, time_server, mode: str, name: str = "time") -> None:
    result = run([sdk_python, tool("sdk_client.py"), mode, "time", "--", *tee(db, *time_server, name=name)], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]


def replay(db, session: str, *args: str, timeout: float = 120):
    return cli("replay", "--db", str(db), session, *args, timeout=timeout)


def sdk_stdio_server(sdk_python: str) -> str:
    return shlex.join([sdk_python, tool("sdk_http_server.py"), "stdio"])


def record_sdk_stdio_session(db, sdk_python, mode: str = "legacy", *what: str, name: str = "sdk") -> dict:
    chain = shlex.join(tee(db, sdk_python, tool("sdk_http_server.py"), "stdio", name=name))
    result = run([sdk_python, tool("sdk_http_client.py"), mode, "stdio", chain, *what], timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return json.loads(result.stdout)


def sessions(db) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY started_at")]
    conn.close()
    return rows


def frames_of(db, session_id: str) -> list[tuple[str, bytes]]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT direction, CAST(raw AS BLOB) FROM frames WHERE session_id = ? ORDER BY seq",
                        (session_id,)).fetchall()
    conn.close()
    return rows


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_replay_of_a_time_session_against_the_same_server_is_equal_once_volatile_members_are_ignored(
        db, sdk_python, time_server, mode):
    record_time_session(db, sdk_python, time_server, mode)
    recorded_second = int(max(ts for ts, in sqlite3.connect(db).execute("SELECT ts FROM frames")))
    wait_for(lambda: time.time() >= recorded_second + 1, 5, "the clock to reach the next second")  # datetimes differ
    command = shlex.join(time_server)
    raw = replay(db, "time", "--command", command)
    assert raw.returncode == 1, raw.stdout.decode() + raw.stderr.decode()
    assert "$.result.structuredContent.datetime" in raw.stdout.decode()
    same = replay(db, "time", "--command", command, *TIME_VOLATILE)
    assert same.returncode == 0, same.stdout.decode() + same.stderr.decode()
    assert "equal:" in same.stdout.decode()
    original, first, second = sessions(db)
    assert first["replay_of"] == second["replay_of"] == original["id"]
    assert second["transport"] == "stdio" and json.loads(second["command"]) == time_server
    assert len(frames_of(db, second["id"])) == len(frames_of(db, original["id"]))


def test_replay_against_a_server_changed_to_answer_differently_exits_1_and_names_the_member(
        db, sdk_python, time_server):
    record_time_session(db, sdk_python, time_server, "legacy")
    changed = shlex.join([*time_server, "--local-timezone", "America/New_York"])
    result = replay(db, "time", "--command", changed, *TIME_VOLATILE, "--format", "json")
    assert result.returncode == 1, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["equal"] is False
    (differs,) = [m for m in report["messages"] if not m["equal"]]
    assert differs["what"].startswith("answer to frame") and "tools/list" in differs["what"]
    paths = [c["path"] for c in differs["changes"]]
    assert "$.result.tools[0].inputSchema.properties.timezone.description" in paths
    change = differs["changes"][0]
    assert "Etc/UTC" in change["recorded"] and "America/New_York" in change["live"]


def test_server_sampling_and_elicitation_replay_with_the_recorded_answers(db, sdk_python):
    out = record_sdk_stdio_session(db, sdk_python, "legacy", "ask", "sample")
    assert out["sample"] == "the model said: an old silent pond"
    result = replay(db, "sdk", "--command", sdk_stdio_server(sdk_python))
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    replayed = sessions(db)[-1]
    sent = [json.loads(raw) for direction, raw in frames_of(db, replayed["id"]) if direction == "c2s"]
    got = [json.loads(raw) for direction, raw in frames_of(db, replayed["id"]) if direction == "s2c"]
    (sampling,) = [m for m in got if m.get("method") == "sampling/createMessage"]
    (answer,) = [m for m in sent if m.get("id") == sampling["id"] and "result" in m and "model" in m["result"]]
    assert answer["result"]["content"]["text"] == "an old silent pond"  # the recorded answer, under the live id
    (tool_answer,) = [m for m in got if "the model said" in json.dumps(m)]
    assert tool_answer["result"]["content"][0]["text"] == "the model said: an old silent pond"


@pytest.mark.parametrize("mode, transport", [("legacy", "streamable"), ("legacy", "sse"), ("auto", "streamable")])
def test_a_stdio_recorded_session_replays_against_the_http_form_of_the_same_server(db, sdk_python, mode, transport):
    """2026-07-28 over HTTP needs the headers its requests imply (MCP-Protocol-Version, Mcp-Method,
    Mcp-Name): the SDK server refuses requests without them."""
    record_sdk_stdio_session(db, sdk_python, mode, *(("ask", "sample") if mode == "legacy" else ()))
    with sdk_http_server(sdk_python, transport) as base:
        args = ["--url", f"{base}/mcp"] if transport == "streamable" else ["--url", f"{base}/sse", "--sse"]
        result = replay(db, "sdk", *args)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    replayed = sessions(db)[-1]
    assert replayed["transport"] == ("http" if transport == "streamable" else "sse")
    assert replayed["upstream"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_http_recorded_session_replays_against_the_stdio_form_of_the_same_server(db, sdk_python, mode):
    what = ("ask", "sample") if mode == "legacy" else ()  # 2026-07-28 has no server-to-client requests
    with sdk_http_server(sdk_python, "streamable") as base:
        with mcptap_proxy(db, f"{base}/mcp", "--name", "web") as proxy:
            result = run([sdk_python, tool("sdk_http_client.py"), mode, "streamable", f"{proxy.url}/mcp", *what],
                         timeout=120)
            assert result.returncode == 0, result.stderr.decode()[-2000:]
        (recorded,) = sessions(db)  # the proxy has stopped: all of it is stored
        assert recorded["transport"] == "http"
        again = replay(db, "web")  # no --command, no --url: the URL it was recorded from
        assert again.returncode == 0, again.stdout.decode() + again.stderr.decode()
        assert sessions(db)[-1]["upstream"] == f"{base}/mcp"
    replayed = replay(db, "web", "--command", sdk_stdio_server(sdk_python))
    assert replayed.returncode == 0, replayed.stdout.decode() + replayed.stderr.decode()
    assert sessions(db)[-1]["transport"] == "stdio"


def test_with_command_from_log_the_server_a_stdio_session_was_recorded_from_runs_again_named_first(
        time_db, time_server):
    result = replay(time_db, "time", "--command-from-log", *TIME_VOLATILE)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert json.loads(sessions(time_db)[-1]["command"]) == time_server
    assert result.stderr.decode().splitlines()[0].endswith(shlex.join(time_server))


def test_without_command_url_or_command_from_log_a_stdio_session_is_not_replayed(time_db, time_server):
    before = len(sessions(time_db))
    result = replay(time_db, "time", timeout=30)
    assert result.returncode == 2 and "--command-from-log" in one_error_line(result)
    assert len(sessions(time_db)) == before  # no server started, nothing recorded


def test_a_session_whose_command_is_not_a_command_line_is_a_one_line_error(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"record": "session", "session": "s1", "command": "not json"}) + "\n"
                   + json.dumps({"session": "s1", "ts": 1.0, "direction": "c2s",
                                 "raw": '{"jsonrpc":"2.0","id":1,"method":"ping"}'}) + "\n", encoding="utf-8")
    db = tmp_path / "imported.db"
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    result = replay(db, "s1", timeout=30)
    assert result.returncode == 2
    assert "not a command line" in one_error_line(result)


def test_a_session_that_names_no_server_needs_command_or_url(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"session": "s1", "ts": 1.0, "direction": "c2s",
                               "raw": '{"jsonrpc":"2.0","id":1,"method":"ping"}'}) + "\n", encoding="utf-8")
    db = tmp_path / "imported.db"
    assert cli("import", "--db", str(db), str(log)).returncode == 0
    result = replay(db, "s1", timeout=30)
    assert result.returncode == 2
    assert "names no server to replay against" in one_error_line(result)


# -- bad input: a clear message and exit 2, within a bounded time ----------------------------------

@pytest.fixture(scope="module")
def time_db_template(tmp_path_factory, sdk_python, time_server):
    path = tmp_path_factory.mktemp("time") / "time.db"
    record_time_session(path, sdk_python, time_server, "legacy")
    return path


@pytest.fixture
def time_db(tmp_path, time_db_template):
    path = tmp_path / "time.db"
    shutil.copy(time_db_template, path)
    return path


def one_error_line(result) -> str:
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptap: error: "), result.stderr.decode()
    assert b"Traceback" not in result.stdout + result.stderr
    return lines[0]


def test_replay_of_an_unknown_session_is_a_one_line_error(time_db):
    db = time_db
    result = replay(db, "no-such-session", "--command", "true", timeout=30)
    assert result.returncode == 2
    assert "no session 'no-such-session'" in one_error_line(result)


def test_replay_against_a_server_that_exits_at_once_says_so_and_exits_2(time_db):
    db = time_db
    started = time.monotonic()
    result = replay(db, "time", "--command", "sh -c 'echo broken >&2; exit 3'", timeout=30)
    assert result.returncode == 2
    line = one_error_line(result)
    assert "exited with status 3" in line and "broken" in line and "initialize" in line
    assert time.monotonic() - started < 20


def test_replay_against_a_server_that_never_answers_gives_up_after_the_timeout(time_db):
    db = time_db
    started = time.monotonic()
    result = replay(db, "time", "--command", "sleep 600", "--timeout", "1", timeout=60)
    assert result.returncode == 2
    assert "never answered" in one_error_line(result)
    assert time.monotonic() - started < 20


def test_replay_against_a_url_nobody_listens_on_is_a_one_line_error(time_db):
    db = time_db
    result = replay(db, "time", "--url", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "2", timeout=60)
    assert result.returncode == 2
    assert "Connection refused" in one_error_line(result)


@pytest.mark.parametrize("args, says", [
    (("--command", "true", "--url", "http://127.0.0.1:1/"), "not both"),
    (("--command", "true", "--ignore-path", "$.result[oops"), "cannot read the JSON path"),
    (("--url", "ftp://example.invalid/"), "http:// or https://"),
    (("--url", "http://[::1/mcp"), "http:// or https://"),  # urlsplit raises: an unclosed bracket
    (("--url", "http://127.0.0.1:99999/mcp"), "http:// or https://"),  # no port: not a 10 s wait
])
def test_replay_usage_mistakes_are_one_line_errors(time_db, args, says):
    db = time_db
    result = replay(db, "time", *args, timeout=30)
    assert result.returncode == 2
    assert says in one_error_line(result)
