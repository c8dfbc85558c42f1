"""The security rules judged inside the session core's one pass (analyzer/analysis/security/feed.py):
on every case of tests/analysis/test_security.py, and on frames capture redacted something in, the
session core (exact path and fast path, stdio and HTTP) reports what the security reading alone
reports of the same frames, finding for finding."""

from __future__ import annotations

import json

import pytest

from mcptap.analysis.rules import load
from mcptap.analysis.session import SessionAnalysis
from tests.analysis.test_security import CASES, READ, call, listing, read, session
from tests.support.sessions import ok, req

SECURITY = {c for c, r in load().items() if r.group == "security"}


def in_pass(rows, *, exact_only=False, http=False, policy=None):
    """The security findings of the session core fed these (seq, ts, direction, raw, redacted) rows."""
    exchanges = [] if http else None  # frames on a GET stream: `http_frame`, its redacted paths passed
    analysis = SessionAnalysis("S", revision="2025-06-18", revision_source="option", stdio=not http, ended=True,
                               policy=policy, exact_only=exact_only, security=True, exchanges=exchanges,
                               transport="http" if http else None)
    if http:
        for seq, ts, direction, raw, redacted in rows:
            analysis.http_frame(seq, ts, direction, raw, None, redacted)
    else:
        analysis.feed(rows)
    analysis.end()
    return [f for f in analysis.take_findings() if f.code in SECURITY]


def alone(rows):
    return [f for f in read(rows) if f.code in SECURITY]


REDACTED = [(seq, ts, d, raw, json.dumps(["$.params.arguments.note|url"]) if b'"note"' in raw else None)
            for seq, ts, d, raw, _ in session(listing(0, [READ]), call(0, "read_file", {"path": "x", "note": "see [k:1]"}))]
"""A call whose argument capture redacted (a URL with a token): only the frame's recorded paths say so."""
ANSWER = session(listing(0, [READ]), [("c2s", req(200, "tools/call", {"name": "read_file", "arguments": {"path": "y"}})),
                                      ("s2c", ok(200, {"content": [{"type": "text", "text": "Bearer abcdefgh12345678"}]}))])
CASES_IN_PASS = {f"{code}-{which}": rows for code, pair in CASES.items() for which, rows in zip(("fires", "quiet"), pair)}
CASES_IN_PASS |= {"redacted-argument": REDACTED, "secret-in-answer": ANSWER}


@pytest.mark.parametrize("exact_only", [False, True], ids=["fast", "exact"])
@pytest.mark.parametrize("name", sorted(CASES_IN_PASS))
def test_the_one_pass_finds_what_the_reading_alone_finds(name, exact_only):
    rows = CASES_IN_PASS[name]
    assert in_pass(rows, exact_only=exact_only) == alone(rows)


@pytest.mark.parametrize("name", ["secret-in-arguments-fires", "redacted-argument", "secret-in-answer",
                                  "tool-undeclared-fires"])
def test_the_one_pass_over_http_finds_what_the_reading_alone_finds(name):
    rows = CASES_IN_PASS[name]
    assert in_pass(rows, http=True) == alone(rows)


def test_a_secret_capture_redacted_and_one_in_an_answer_are_reported():
    assert [f.code for f in in_pass(REDACTED)] == ["secret-in-arguments"]
    assert in_pass([(*row[:4], None) for row in REDACTED]) == []  # what the recorded paths alone said
    assert [f.code for f in in_pass(ANSWER)] == ["secret-in-arguments"]


def test_without_security_the_core_judges_none_of_the_group():
    rows = CASES["secret-in-arguments"][0]
    analysis = SessionAnalysis("S", revision="2025-06-18", revision_source="option", stdio=True, ended=True)
    analysis.feed([row[:4] for row in rows])
    analysis.end()
    assert not analysis.reads_security and not {f.code for f in analysis.take_findings()} & SECURITY
