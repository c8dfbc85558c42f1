"""Free-text redaction in time linear in its input: a server's stderr line made of a credential
name and a long run of backslashes (`password="\\\\\\...`) is redacted in one pass, in the tee,
in `mcptap import` and in `mcptap redact` (real processes), and the time grows with the line's
length as a line, not as its square (measured at n and 4n)."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pytest

from mcptap.redaction import FrameRedactor, Redaction, Redactor
from tests.conftest import mcptap, run, tee, tool

HOSTILE = {
    "after a quoted name": lambda n: b'password="' + b"\\" * n,
    "after an escaped quote": lambda n: b'password=\\"' + b"\\" * n,
    "before an escaped name": lambda n: b"\\" * n + b'"password\\" \\',
    "escaped name and value": lambda n: b'\\"password\\": \\"' + b"\\" * n + b'"',
}
LINEAR = 8.0  # t(4n) / t(n): 4 for a line, 16 for a square; the slack is for a busy machine
BOUND_S = 60  # a real process with a 200 KB line of backslashes ends well within this (minutes, squared)


def _seconds(work, reps: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            work()
        best = min(best, time.perf_counter() - start)
    return best


def growth(redact, line) -> float:
    """t(4n) / t(n) for `redact(line(n))`, n = 4000 backslashes, each time the best of three runs of
    enough repetitions to take a measurable time."""
    small, large = line(4000), line(16000)
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.05 and reps < 10_000:
        redact(small)
        reps += 1
    return _seconds(lambda: redact(large), reps) / _seconds(lambda: redact(small), reps)


@pytest.mark.serial
@pytest.mark.parametrize("shape", HOSTILE)
def test_free_text_redaction_takes_time_linear_in_a_line_of_backslashes(shape):
    redactor = FrameRedactor(Redaction(), Redactor(b"test-key"))
    assert growth(redactor.text, HOSTILE[shape]) < LINEAR


def _stderr_line(db: Path) -> bytes:
    conn = sqlite3.connect(db)
    try:
        (raw,) = conn.execute("SELECT CAST(raw AS BLOB) FROM stderr_lines").fetchone()
    finally:
        conn.close()
    return raw


def _ok(argv: list[str]) -> None:
    done = run(argv, timeout=BOUND_S)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]


@pytest.mark.serial
def test_a_stderr_line_of_200_kb_of_backslashes_is_redacted_by_the_tee_import_and_redact_in_bounded_time(tmp_path):
    line = b'password="' + b"\\" * 200_000 + b"\n"
    source = tmp_path / "line.txt"
    source.write_bytes(line)
    child = [sys.executable, tool("emit.py"), str(source), "--stderr"]
    redacted, kept = tmp_path / "redacted.db", tmp_path / "kept.db"
    _ok(tee(redacted, *child))  # the tee: redacted as it is recorded
    _ok(mcptap("record", "--db", str(kept), "--no-redact", "--", *child))
    assert _stderr_line(kept) == line.rstrip(b"\n")
    log = tmp_path / "kept.jsonl"
    _ok(mcptap("export", "--db", str(kept), "-o", str(log)))
    imported = tmp_path / "imported.db"
    _ok(mcptap("import", "--db", str(imported), str(log)))
    _ok(mcptap("redact", "--db", str(kept)))
    for db in (redacted, imported, kept):
        stored = _stderr_line(db)
        assert stored.startswith(b'password="[redacted:') and b"\\\\" not in stored, stored[:80]
