"""The in-process runner of the tests (tests/support/inprocess.py) answers as the real `mcptap`
process does: the same status, stdout and stderr; an exception nothing catches is a traceback on
stderr and status 1 (so a test that a command shows none can fail); the environment is the one
given, whole, and the test's own is back afterwards."""

import os
from pathlib import Path

import pytest

from tests.conftest import mcptap, run
from tests.support import inprocess
from tests.support.inprocess import cli

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"


@pytest.mark.parametrize("args", [
    ("--version",),
    ("sessions", "--db", "{tmp}/none.db"),
    ("analyze", "--rules", "--format", "jsonl"),
    ("show", "--format", "nope"),
    ("import", "--db", "{tmp}/x.db", "{tmp}/missing.jsonl"),
    ("record", "--max-frame", "lots", "--", "true"),
])
def test_a_command_run_in_process_answers_as_the_process_does(args, tmp_path):
    argv = [a.format(tmp=tmp_path) for a in args]
    real, inside = run(mcptap(*argv)), cli(*argv)
    assert (inside.returncode, inside.stdout, inside.stderr) == (real.returncode, real.stdout, real.stderr)


def test_an_exception_no_command_catches_is_a_traceback_and_status_1(monkeypatch):
    if not inprocess.IN_PROCESS:
        pytest.skip("MCPTAP_TEST_SUBPROCESS=1: every run is a real process")

    def broken(argv):
        raise RuntimeError("a bug")

    monkeypatch.setattr("mcptap.quick.main", broken)
    done = cli("sessions")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.startswith(b"Traceback (most recent call last):") and b"RuntimeError: a bug" in done.stderr


def test_the_environment_is_the_one_given_and_the_tests_own_comes_back(tmp_path, monkeypatch):
    (tmp_path / "log.jsonl").write_bytes(CORPUS.read_bytes())
    monkeypatch.setenv("MCPTAP_DB", str(tmp_path / "from-the-test.db"))
    before, here = dict(os.environ), os.getcwd()
    given = {k: v for k, v in os.environ.items() if k != "MCPTAP_DB"}
    done = cli("import", "log.jsonl", env={**given, "MCPTAP_DB": "given.db"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "given.db").is_file() and not (tmp_path / "from-the-test.db").exists()
    assert dict(os.environ) == before and os.getcwd() == here
