"""What `mcptap mcp`'s tools answer (analyzer/mcpface/reading.py), without the SDK: bounded, paged,
escaped, read-only, and bad arguments refused in one line. The SDK binding is driven by a real
client in tests/e2e/test_mcp_face.py."""

from __future__ import annotations

import json

import pytest

from mcptap.mcpface import reading
from mcptap.store.viewpages import connect_readonly
from tests.conftest import mcptap, run
from tests.support.sessions import handshake, ok, req

BIDI = "tools/call\u202eevil"
BIG = "x" * 20_000
FRAMES = handshake() + [("c2s", req(1, "tools/call", {"name": "echo", "arguments": {"text": BIG}})),
                        ("s2c", ok(1, {"content": [{"type": "text", "text": BIG}]})),
                        ("c2s", req(2, BIDI))] + [("c2s", req(10 + i, "ping")) for i in range(30)]


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("face")
    log, db = folder / "log.jsonl", folder / "f.db"
    with open(log, "w", encoding="utf-8") as fh:
        for i, (direction, raw) in enumerate(FRAMES):
            fh.write(json.dumps({"session": "one", "seq": i + 1, "ts": 1000 + i / 100, "direction": direction,
                                 "raw": raw}) + "\n")
    assert run(mcptap("import", "--db", str(db), "--no-redact", str(log))).returncode == 0
    assert run(mcptap("analyze", "--db", str(db))).returncode in (0, 1)
    c = connect_readonly(str(db))
    yield c
    c.close()


def test_pages_are_bounded_and_say_where_to_go_on(conn):
    first = reading.search(conn, "method == ping", limit=25)
    assert len(first["frames"]) == 25 and first["next_offset"] == 25
    rest = reading.search(conn, "method == ping", offset=first["next_offset"], limit=25)
    assert len(rest["frames"]) == 5 and rest["next_offset"] is None
    assert len(reading.search(conn, "method == ping", limit=10_000)["frames"]) == 30  # cut to MAX_LIMIT
    assert reading.search(conn, "method == ping", limit=0)["frames"][0]["method"] == "ping"  # at least one


def test_frame_text_is_cut_and_traffic_text_is_escaped(conn):
    call = reading.search(conn, 'method == "tools/call" and kind == request', limit=1)["frames"][0]
    got = reading.frame(conn, "one", call["seq"])
    assert len(got["frame"]["text"]) < reading.FRAME_CHARS + 100
    assert got["frame"]["text"].endswith("bytes in all]")
    assert got["pair"]["kind"] == "response" and got["pair"]["text"].endswith("bytes in all]")
    odd = reading.search(conn, "id == 2", limit=1)["frames"][0]
    assert odd["method"] == "tools/call\\u202eevil"
    assert "\u202e" not in reading.frame(conn, "one", odd["seq"])["frame"]["text"]
    summary = reading.summary(conn, "one")
    assert "\u202e" not in json.dumps(summary, ensure_ascii=False)


@pytest.mark.parametrize("call, says", [
    (lambda c: reading.search(c, "kind =="), "the filter does not parse"),
    (lambda c: reading.frame(c, "nope", 1), "no session 'nope'"),
    (lambda c: reading.frame(c, "one", 10_000), "has no frame 10000"),
    (lambda c: reading.findings(c, severity="fatal"), "severity is one of"),
])
def test_bad_arguments_are_refused_in_one_line(conn, call, says):
    with pytest.raises(reading.BadRequest) as caught:
        call(conn)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_findings_carry_their_rule_and_reference(conn):
    found = reading.findings(conn, limit=100)
    assert found["total"] >= 1
    assert all(f["explanation"] and f["reference"] and f["group"] for f in found["findings"])
    assert reading.findings(conn, code="no-such-code")["findings"] == []


def test_only_the_face_imports_the_mcp_sdk():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    importers = []
    for path in [*(root / "analyzer").rglob("*.py"), *(root / "addons").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            if any(n == "mcp" or n.startswith("mcp.") for n in names):
                importers.append(path.relative_to(root).as_posix())
    assert sorted(set(importers)) == ["analyzer/mcpface/server.py"]
