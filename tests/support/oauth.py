"""Servers behind OAuth for the end-to-end tests: the SDK's authorization server and an MCP server that
requires its tokens (tests/tools/sdk_oauth_server.py, faults planted on request), and what a recording
of their flow must show (every exchange in one session, no token in clear)."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import analyze_json, tool, wait_for
from tests.support.http_helpers import START_TIMEOUT_S, accepting, free_port, http_server

TOKEN = re.compile(rb"\b(?:at|rt)-[A-Za-z0-9_-]{20,}")  # what the test authorization server issues
MASKED = re.compile(r"^Bearer \[redacted:[0-9a-f]{16}\]$")


@contextlib.contextmanager
def running_oauth_server(sdk_python: str, *fault: str):
    """(authorization server URL, MCP server URL) of a running tests/tools/sdk_oauth_server.py."""
    as_port, rs_port = free_port(), free_port()
    with http_server([sdk_python, tool("sdk_oauth_server.py"), str(as_port), str(rs_port), *fault], rs_port) as rs:
        wait_for(lambda: accepting(as_port), START_TIMEOUT_S, "the authorization server to listen")
        yield f"http://127.0.0.1:{as_port}", rs


@pytest.fixture(scope="module")
def oauth_server(sdk_python):
    """running_oauth_server's URLs, one server for a module (a test module imports this fixture)."""
    with running_oauth_server(sdk_python) as urls:
        yield urls


def exchanges(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM exchanges ORDER BY started_at")]
    conn.close()
    return rows


def stored_bytes(db: Path) -> bytes:
    return b"".join(Path(f"{db}{suffix}").read_bytes() for suffix in ("", "-wal") if Path(f"{db}{suffix}").exists())


def assert_no_token_in_clear(db: Path) -> None:
    assert TOKEN.search(stored_bytes(db)) is None
    for row in exchanges(db):
        for name, value in json.loads(row["request_headers"] or "[]"):
            if name.lower() == "authorization":
                assert MASKED.match(value), value


def found_codes(db: Path) -> set[str]:
    """The codes of the errors and warnings `mcptap analyze` finds."""
    status, report = analyze_json(db)
    return {f["code"] for f in report["findings"] if f["severity"] in ("error", "warning")}
