"""Schema findings on real traffic: a real stdio server that plants one violation of each family of
schema rule (tests/tools/misbehaving_server.py), recorded through `mcptap record` and analysed by
the command: each is found at its JSON path, once, and the conformant messages beside them are not."""

import json
import sys

import pytest

from tests.conftest import analyze_json, run, tee, tool

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}


def lines(*messages: dict) -> bytes:
    return b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages)


def call(id_: int, name: str | None = None, **arguments) -> dict:
    params = {"arguments": arguments} | ({"name": name} if name else {})
    return {"id": id_, "method": "tools/call", "params": params}


def findings(db, code: str) -> list[tuple[int, str]]:
    status, report = analyze_json(db, "--fail-on", "never")
    assert status == 0
    return sorted((f["frame"], f["message"]) for f in report["findings"] if f["code"] == code)


def paths_at(found: list[tuple[int, str]]) -> list[str]:
    """The JSON paths found, sorted (the tee may record the client's lines before the answers)."""
    return sorted(message.split(":")[0] for _, message in found)


@pytest.fixture(scope="module")
def handshake_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("schema") / "handshake.db"
    script = lines({"id": 0, "method": "initialize", "params": INIT}, {"method": "notifications/initialized"},
                   {"id": 1, "method": "tools/list", "params": {}},
                   call(2),  # no tool name
                   call(3, "odd"), call(4, "typed", n="x"), call(5, "typed", n=5), call(6, "failing"), call(7, "log"))
    done = run(tee(db, sys.executable, tool("misbehaving_server.py")), input=script, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return db


def test_each_planted_schema_violation_of_a_real_server_is_found_at_its_path(handshake_db):
    found = findings(handshake_db, "schema-violation")
    assert paths_at(found) == sorted(["$.result.tools[4].name",  # wrong type
                                      "$.params.name",  # a required member absent (the client's)
                                      "$.result.content[0].type",  # a content block of an unknown type
                                      "$.params.level"]), found  # a value outside the schema's set
    by_path = dict((m.split(":")[0], m) for _, m in found)
    assert "string" in by_path["$.result.tools[4].name"] and "number" in by_path["$.result.tools[4].name"]
    assert "'text'" in by_path["$.result.content[0].type"] and '"html"' in by_path["$.result.content[0].type"]
    assert "'warning'" in by_path["$.params.level"] and '"loud"' in by_path["$.params.level"]


def test_structured_content_is_checked_against_the_tools_declared_output_schema_except_on_errors(handshake_db):
    found = findings(handshake_db, "structured-content-mismatch")
    assert len(found) == 1, found  # typed(n="x"), not typed(n=5), not the isError result of failing
    message = found[0][1]
    assert message.startswith("$.result.structuredContent.n:") and "integer" in message and "'typed'" in message


def test_a_2026_07_28_result_without_result_type_is_a_schema_violation(tmp_path):
    db = tmp_path / "modern.db"
    script = lines({"id": 1, "method": "tools/call", "params": {"name": "log", "_meta": MODERN_META}})
    done = run(tee(db, sys.executable, tool("misbehaving_server.py")), input=script, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    found = findings(db, "schema-violation")
    assert paths_at(found) == ["$.params.level", "$.result.resultType"], found
