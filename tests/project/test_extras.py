"""The plain install (no extras) records, analyzes, shows, exports, imports and redacts a stdio
session without mitmproxy, pandas, numpy or matplotlib, and a command that needs an extra says in
one line which to install (exit 2). Here the extras' modules are blocked in the mcptap process
(`sys.modules[name] = None`: every import of them fails); the wheel smoke (.ci/wheel_smoke.py)
checks a real plain install in a fresh venv."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import run

BLOCKED = ("mitmproxy", "pandas", "numpy", "matplotlib", "opentelemetry")
PLAIN = [sys.executable, "-c", f"import runpy, sys\nfor name in {BLOCKED!r}:\n    sys.modules[name] = None\n"
         "sys.argv[0] = 'mcptap'\nrunpy.run_module('mcptap', run_name='__main__', alter_sys=True)"]


def plain(*args: str, **kw):
    return run([*PLAIN, *args], **kw)


def test_the_blocker_blocks_what_the_extras_install():
    result = run([*PLAIN[:2], PLAIN[2].split("sys.argv")[0] + "import pandas"])
    assert result.returncode == 1 and b"import of pandas halted" in result.stderr


CALLS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "ping"},
]


@pytest.fixture(scope="module")
def plain_db(tmp_path_factory):
    """The bundled stdio server recorded through the plain install's tee."""
    db = tmp_path_factory.mktemp("plain") / "plain.db"
    result = plain("record", "--db", str(db), "--name", "plain", "--", sys.executable, "-m", "mcptap.demo.server",
                   input=b"".join(json.dumps(c).encode() + b"\n" for c in CALLS))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b"\n") == 4  # the four answers
    return db


def test_the_plain_install_records_and_analyzes_a_stdio_session(plain_db):
    listed = plain("sessions", "--db", str(plain_db), "--json")
    assert listed.returncode == 0, listed.stderr
    (session,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert session["label"] == "plain" and session["frames"] == 9
    for fmt in ("table", "json", "jsonl", "sarif"):
        analyzed = plain("analyze", "--db", str(plain_db), "--format", fmt)
        assert analyzed.returncode == 0, (fmt, analyzed.stderr)
    report = json.loads(plain("analyze", "--db", str(plain_db), "--format", "json").stdout)
    assert report["sessions"][0]["errors"] == 0


def test_the_plain_install_shows_exports_imports_and_redacts(plain_db, tmp_path):
    shown = plain("show", "--db", str(plain_db), "plain")
    assert shown.returncode == 0 and b"tools/call" in shown.stdout, shown.stderr
    log = tmp_path / "plain.jsonl"
    assert plain("export", "--db", str(plain_db), "-o", str(log)).returncode == 0
    again = tmp_path / "again.db"
    imported = plain("import", "--db", str(again), str(log))
    assert imported.returncode == 0, imported.stderr
    assert plain("redact", "--db", str(again)).returncode == 0
    assert plain("analyze", str(log)).returncode == 0


@pytest.mark.parametrize("args, extra", [
    (("proxy", "--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:0"), "proxy"),
    (("report", "-o", "r.html"), "notebook"),
    (("demo",), "proxy"),
    (("export", "--format", "otlp"), "otel"),
    (("export", "--otlp-endpoint", "http://127.0.0.1:9"), "otel"),
    (("view", "--listen", "127.0.0.1:0"), "view"),
])
def test_a_command_that_needs_a_missing_extra_says_which_to_install_and_exits_2(plain_db, tmp_path, args, extra):
    result = plain(*args, "--db", str(plain_db), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert line.startswith("mcptap: error: ") and f"pip install 'mcptap[{extra}]'" in line


def test_importing_a_capture_without_the_proxy_extra_says_which_to_install(tmp_path):
    har = tmp_path / "capture.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": []}}))
    for args in (("import", "--db", str(tmp_path / "h.db"), str(har)), ("analyze", str(har))):
        result = plain(*args)
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.decode().splitlines()
        assert "capture.har (a HAR file) needs mitmproxy: pip install 'mcptap[proxy]'" in line, line


@pytest.mark.parametrize("module", ["mcptap.data", "mcptap.plots"])
def test_the_pandas_api_without_the_notebook_extra_says_in_one_line_which_to_install(module):
    script = PLAIN[2].split("sys.argv")[0] + (
        f"try:\n    import {module}\nexcept ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    result = run([*PLAIN[:2], script])
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.decode().splitlines()
    assert line.startswith("MissingExtra ") and "pip install 'mcptap[notebook]'" in line and "numpy" in line
