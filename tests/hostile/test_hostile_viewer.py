"""The viewer and the display filter under hostile input, through real processes (`mcptap view` as
a subprocess answering real HTTP requests; `show`, `export`, `analyze`, `report`): a filter nested
thousands deep is a one-line error (400 from the viewer), a long `or` chain still works, a
backtracking regular expression is matched in linear time (the viewer keeps answering), numbers past
64 bits are a 400, a database named with a `%` escape is the file of that name, stderr lines of
megabytes reach neither the report nor the viewer's API whole, and a connection that never finishes
its request is closed."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import mcptap, run
from tests.support.viewing import viewing

INIT = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')
INIT_ANSWER = ('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
               '"serverInfo":{"name":"s","version":"1"}}}')
BACKTRACKING = '"' + "a" * 40 + '"'  # (a+)+!x on it: 2**40 paths for a backtracking engine
DEEP = 3000
STDERR_LINE_BYTES = 2_000_000
STDERR_LINES = 3


def imported(folder: Path, name: str, label: str, stderr: list[str] = ()) -> Path:
    """A database of one session (`label`): a handshake, a ping whose id is a long string of a's,
    and these stderr lines."""
    lines = [{"record": "session", "session": label, "label": label, "transport": "stdio"}]
    frames = [("c2s", INIT), ("s2c", INIT_ANSWER), ("c2s", '{"jsonrpc":"2.0","id":' + BACKTRACKING + ',"method":"ping"}')]
    lines += [{"session": label, "seq": i + 1, "ts": 1764460800 + i, "direction": d, "raw": raw}
              for i, (d, raw) in enumerate(frames)]
    lines += [{"record": "stderr", "session": label, "seq": i + 1, "ts": 1764460800.5 + i, "raw": text}
              for i, text in enumerate(stderr)]
    log = folder / f"{label}.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = folder / name
    result = run(mcptap("import", str(log), "--db", str(db)), timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return db


def get(url: str, path: str, timeout: float = 30, **query) -> tuple[int, bytes]:
    """(status, body) of GET path?query on the viewer at `url` (its token sent as a header)."""
    base, token = url.split("?token=")
    request = urllib.request.Request(base.rstrip("/") + path + "?" + urllib.parse.urlencode(query),
                                     headers={"X-Mcptap-Token": token})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("viewer")
    db = imported(folder, "hostile.db", "hostile", ["x" * STDERR_LINE_BYTES] * STDERR_LINES)
    with viewing(db) as url:
        yield {"db": db, "url": url, "session": json.loads(get(url, "/api/summary")[1])["sessions"][0]["id"]}


def nested(depth: int) -> str:
    return "(" * depth + "seq == 1" + ")" * depth


@pytest.mark.parametrize("text", [nested(DEEP), "not " * DEEP + "seq == 1", "!" * DEEP + "seq == 1"],
                         ids=["parentheses", "not", "bang"])
def test_a_filter_nested_thousands_deep_is_a_one_line_error_in_each_command_and_a_400_from_the_viewer(served, text):
    db = str(served["db"])
    for command in (("show", "hostile"), ("export",), ("analyze",)):
        result = run(mcptap(*command, "--db", db, "--filter", text))
        assert result.returncode == 2, (command, result.stderr[-300:])
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("mcptap: error: bad filter at column "), (command, lines)
    status, body = get(served["url"], "/api/rows", filter=text)
    assert status == 400 and json.loads(body)["error"].startswith("bad filter at column ")


def test_a_chain_of_thousands_of_or_tests_selects_its_frames():
    from mcptap.store import filterlang, filtersql

    tree = filterlang.parse(" or ".join(f"seq == {i}" for i in range(1, DEEP // 2)))
    sql, params = filtersql.where(tree)
    assert len(params) == DEEP // 2 - 1 and sql.count("(") < 20 * DEEP


def test_a_chain_of_thousands_of_or_tests_works_in_show_and_the_viewer(served):
    text = " or ".join(f"seq == {i}" for i in range(1, 1500))
    shown = run(mcptap("show", "--db", str(served["db"]), "hostile", "--filter", text, "--format", "jsonl"))
    assert shown.returncode == 0, shown.stderr[-300:]
    assert [json.loads(line)["seq"] for line in shown.stdout.decode().splitlines()[1:]] == [1, 2, 3]
    status, body = get(served["url"], "/api/rows", filter=text)
    assert status == 200 and json.loads(body)["total"] == 3


def test_a_backtracking_regex_is_matched_in_linear_time_and_the_viewer_keeps_answering(served):
    text = 'text ~ "(a+)+!x"'
    started = time.monotonic()
    status, body = get(served["url"], "/api/rows", timeout=60, filter=text)
    assert status == 200 and json.loads(body)["total"] == 0
    assert get(served["url"], "/api/summary", timeout=10)[0] == 200
    shown = run(mcptap("show", "--db", str(served["db"]), "hostile", "--filter", text), timeout=60)
    assert shown.returncode == 0 and time.monotonic() - started < 30
    found = run(mcptap("show", "--db", str(served["db"]), "hostile", "--filter", 'text ~ "a{40}"', "--format", "jsonl"))
    assert [json.loads(line)["seq"] for line in found.stdout.decode().splitlines()[1:]] == [3]


def test_a_regex_with_a_backreference_is_a_one_line_error(served):
    result = run(mcptap("export", "--db", str(served["db"]), "--filter", r'text ~ "(a)\\1"'))
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcptap: error: bad filter at column 8: not a regular expression")


@pytest.mark.parametrize(("path", "query"), [
    ("/api/frame", {"seq": "9" * 25}), ("/api/frame", {"seq": str(2 ** 63)}), ("/api/frame", {"seq": "1e5"}),
    ("/api/locate", {"seq": "-" + "9" * 25, "filter": ""}), ("/api/rows", {"offset": "9" * 25}),
    ("/api/rows", {"limit": "9" * 25}), ("/api/window", {"from": "1e999", "to": "1"}),
    ("/api/window", {"from": "0", "to": "nan"}), ("/api/window", {"from": "0", "to": "1", "max": "9" * 25})])
def test_numbers_past_64_bits_or_not_finite_are_a_400_from_the_viewer(served, path, query):
    status, body = get(served["url"], path, session=served["session"], **query)
    assert status == 400, body[:300]
    assert "error" in json.loads(body)
    assert get(served["url"], "/api/frame", session=served["session"], seq=str(2 ** 63 - 1))[0] == 404


def test_view_of_a_database_named_with_a_percent_escape_serves_that_file_and_not_the_unescaped_one(tmp_path):
    imported(tmp_path, "my%41.db", "percent")
    imported(tmp_path, "myA.db", "decoy")
    with viewing(tmp_path / "my%41.db") as url:
        status, body = get(url, "/api/summary")
    assert status == 200 and [s["label"] for s in json.loads(body)["sessions"]] == ["percent"]


def test_stderr_lines_of_megabytes_reach_neither_the_viewers_api_nor_the_report_whole(served, tmp_path):
    status, body = get(served["url"], "/api/stderr", session=served["session"])
    assert status == 200
    lines = json.loads(body)
    assert len(lines) == STDERR_LINES and len(body) < 64_000
    assert all(text.startswith("xxxx") and text.endswith(f"[cut: {STDERR_LINE_BYTES:,} bytes in all]")
               for _, text in lines)
    report = tmp_path / "report.html"
    result = run(mcptap("report", "--db", str(served["db"]), "-o", str(report)), timeout=300)
    assert result.returncode == 0, result.stderr[-300:]
    assert report.stat().st_size < STDERR_LINE_BYTES


def test_a_connection_that_never_finishes_its_request_is_closed(served):
    port = int(served["url"].split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 45 and not closed:
            try:
                sock.sendall(b"X-Slow: 1\r\n")  # a header line now and then: each byte used to restart the clock
                sock.settimeout(1)
                closed = sock.recv(4096) == b""
            except socket.timeout:
                continue
            except OSError:
                closed = True
        assert closed, "the half-sent request is still open"
    assert get(served["url"], "/api/summary")[0] == 200
