"""The verdict cache of the schema checks (analyzer/analysis/results.py `Verdicts`): a conformant
member is judged once by its bytes and then looked up; a cached verdict and a fresh one give the
same findings; a violation that repeats is reported every time; the cache stays within its bounds."""

from __future__ import annotations

import pytest

from mcptap.analysis import results, schema_validation
from mcptap.analysis.session import SessionAnalysis
from tests.support.sessions import handshake, note, ok, req

pytestmark = pytest.mark.skipif(results.jsonschema_rs is None or not SessionAnalysis("s", revision=None,
                                revision_source="unknown", stdio=True, ended=True)._scan,
                                reason="the verdicts are kept for the native scanner's members, with jsonschema-rs")

H = handshake("2025-11-25")
TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                    "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]}


def repeated(times: int = 3) -> list[tuple[str, str]]:
    """The same conformant and violating messages again and again, each under a new id."""
    frames = list(H)
    for i in range(times):
        base = 10 * i + 1
        frames += [("c2s", req(base, "tools/list")), ("s2c", ok(base, TOOLS)),
                   ("c2s", req(base + 1, "tools/call", {"name": "t", "arguments": {}})),
                   ("s2c", ok(base + 1, {"content": [], "structuredContent": {"n": "x"}})),
                   ("c2s", req(base + 2, "tools/call", {"arguments": {}})),  # no name: a schema violation
                   ("s2c", ok(base + 2, {"content": []})),
                   ("s2c", note("notifications/progress", {"progressToken": "p", "progress": 1})),
                   ("c2s", req(base + 3, "ping")), ("s2c", ok(base + 3, {}))]
    return frames


def run(frames) -> list:
    analysis = SessionAnalysis("s", revision="2025-11-25", revision_source="option", stdio=True, ended=True)
    analysis.feed([(i, 1000.0 + i, d, raw.encode()) for i, (d, raw) in enumerate(frames, 1)])
    analysis.end()
    return analysis.take_findings()


@pytest.fixture
def verdicts(monkeypatch):
    fresh = results.Verdicts()
    monkeypatch.setattr(results, "VERDICTS", fresh)
    return fresh


@pytest.fixture
def validated(monkeypatch):
    """The members each check judged afresh (not looked up)."""
    seen = []
    judge = schema_validation.Checker.validate
    monkeypatch.setattr(schema_validation.Checker, "validate",
                        lambda self, raw, frame=None: seen.append(self.schema) or judge(self, raw, frame))
    return seen


def test_a_repeated_conformant_member_is_judged_once_then_looked_up(verdicts, validated):
    run(repeated(3))
    assert validated.count("ListToolsRequest") == 1 and validated.count("PingRequest") == 1
    assert validated.count("ListToolsResult") == 1
    assert validated.count("CallToolResult") == 2  # two results, each judged once


def test_a_cached_verdict_and_a_fresh_one_give_the_same_findings(verdicts, monkeypatch):
    cached = run(repeated(4))
    assert len(verdicts.kept) > 0
    monkeypatch.setattr(results.Verdicts, "MAX_ENTRIES", 0)  # nothing kept: every member judged afresh
    monkeypatch.setattr(results, "VERDICTS", results.Verdicts())
    assert run(repeated(4)) == cached


def test_a_violation_that_repeats_is_reported_every_time(verdicts, validated):
    found = run(repeated(3))
    assert [f.code for f in found].count("schema-violation") == 3
    assert [f.code for f in found].count("structured-content-mismatch") == 3  # the result of a tool the listing typed
    assert validated.count("CallToolRequest") == 4  # the violation three times, the conformant call once


def test_the_cache_keeps_within_its_entries_and_bytes(monkeypatch):
    monkeypatch.setattr(results.Verdicts, "MAX_ENTRIES", 5)
    monkeypatch.setattr(results.Verdicts, "MAX_BYTES", 100)
    kept = results.Verdicts()
    for n in range(50):
        kept.conformant(("k", str(n).encode() * 7), 7 * len(str(n)))
    assert len(kept.kept) <= 5 and kept.size <= 100 and kept.size == sum(kept.kept.values())
    assert kept.known(("k", b"49" * 7)) and not kept.known(("k", b"1" * 7))
    kept.conformant(("big", b"x"), results.Verdicts.MAX_MEMBER + 1)
    assert not kept.known(("big", b"x"))
