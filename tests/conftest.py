"""Shared fixtures: real processes, real SQLite files, and the side virtual environment holding
the real `mcp` SDK, `mcp-server-time` and `mcp-server-git` (it cannot live in mcptap's own
environment; see docs/contract.md). The side environment is created once and cached between runs."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.npm_servers"]

TESTS = Path(__file__).parent
TOOLS = TESTS / "tools"
# mcp-server-git (a reference server on this same SDK, `mcp<3,>=2.3`) is one of the real servers
# tests/e2e/test_e2e_reference_servers.py drives.
SDK_PACKAGES = ("mcp==2.3.0", "mcp-server-time==2026.10.19", "mcp-server-git==2026.10.19")
CACHE = Path(os.environ.get("MCPTAP_TEST_CACHE", Path.home() / ".cache" / "mcptap-tests"))
PROCESS_TIMEOUT_S = 60


def mcptap(*args: str) -> list[str]:
    """The mcptap command line, run with the interpreter under test."""
    return [sys.executable, "-m", "mcptap", *args]


def tee(db: Path | str, *argv: str, name: str | None = None) -> list[str]:
    label = ["--name", name] if name else []
    return mcptap("record", "--db", str(db), *label, "--", *argv)


def tool(name: str) -> str:
    return str(TOOLS / name)


def run(argv: list[str], *, input: bytes = b"", timeout: float = PROCESS_TIMEOUT_S, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, input=input, capture_output=True, timeout=timeout, **kw)


def frames(db: Path | str, direction: str | None = None) -> list[bytes]:
    """The recorded frames' raw bytes in seq order (all sessions in the file, by session start)."""
    conn = sqlite3.connect(db)
    where = "WHERE direction = ?" if direction else ""
    rows = conn.execute(
        f"SELECT CAST(raw AS BLOB) FROM frames JOIN sessions ON sessions.id = frames.session_id {where} "
        "ORDER BY sessions.started_at, frames.session_id, seq", (direction,) if direction else ()).fetchall()
    conn.close()
    return [r[0] for r in rows]


def rows(db: Path | str, sql: str, params: tuple = (), *, missing_ok: bool = False) -> list[tuple]:
    """The rows of one query on a database (opened and closed around it); with `missing_ok`, no
    rows while the tables are not there yet (a recorder that has not made them)."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        if missing_ok:
            return []
        raise
    finally:
        conn.close()


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            return "\nState:\tZ" not in fh.read()
    except FileNotFoundError:
        return False


def wait_for(condition, timeout: float, what: str, interval: float = 0.01):
    """Poll `condition` until it returns something truthy, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@pytest.fixture(autouse=True, scope="session")
def _private_config(tmp_path_factory) -> None:
    """Recorders keep their redaction key in the user's config folder: a test's goes to its own."""
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "rec.db"


def side_venv(prefix: str, packages: tuple[str, ...]) -> str:
    """Python of a cached side virtual environment (in CACHE, shared and locked) with these pinned packages."""
    tag = f"py{sys.version_info.major}{sys.version_info.minor}-" + "-".join(p.replace("==", "") for p in packages)
    venv = CACHE / f"{prefix}-{tag}"
    python = venv / "bin" / "python"
    ready = venv / ".ready"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{prefix}-{tag}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages],
                           check=True, stdout=subprocess.DEVNULL)
            ready.write_text("ok\n", encoding="utf-8")
    return str(python)


@pytest.fixture(scope="session")
def sdk_python() -> str:
    """Python of a cached side virtual environment with the real `mcp` SDK and mcp-server-time."""
    return side_venv("sdk", SDK_PACKAGES)


FASTMCP_PACKAGES = ("fastmcp==4.1.6", "mcp==2.3.0")


@pytest.fixture(scope="session")
def fastmcp_python() -> str:
    """Python of a cached side virtual environment with fastmcp (its servers) and the `mcp` SDK it runs on."""
    return side_venv("fastmcp", FASTMCP_PACKAGES)


@pytest.fixture(scope="session")
def time_server(sdk_python: str) -> list[str]:
    return [str(Path(sdk_python).parent / "mcp-server-time")]


@pytest.fixture(scope="session")
def git_server(sdk_python: str) -> list[str]:
    """argv of mcp-server-git over stdio (append `--repository PATH` to confine it to one repository)."""
    return [str(Path(sdk_python).parent / "mcp-server-git")]


def analyze_json(db: Path | str, *args: str) -> tuple[int, dict]:
    """`mcptap analyze --format json` of a database, run in-process: (exit status, the report)."""
    from tests.support.inprocess import cli

    result = cli("analyze", "--db", str(db), "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr.decode(errors="replace")
    return result.returncode, json.loads(result.stdout)


def assert_no_false_findings(db: Path | str, deliberate: tuple[tuple[str, str], ...] = ()) -> dict:
    """Real, conformant traffic: no error and no warning (info is allowed), exit 0 at --fail-on warning.
    `deliberate`: (code, text of its message) of each finding the test's client provokes on purpose
    (a call of a tool nobody declared): each is there once, and is left out of the report returned."""
    status, report = analyze_json(db, "--fail-on", "warning")
    provoked = [f for f in report["findings"] if any(f["code"] == c and t in f["message"] for c, t in deliberate)]
    assert sorted(f["code"] for f in provoked) == sorted(c for c, _ in deliberate), provoked
    report["findings"] = [f for f in report["findings"] if f not in provoked]
    loud = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert loud == [] and status == (1 if any(f["severity"] != "info" for f in provoked) else 0), loud
    return report


EVERYTHING_PROBES = (("tool-undeclared", "'no-such-tool'"),)
"""The findings the clients of server-everything (tests/tools/sdk_client_everything.py, the plan of
tests/e2e/test_e2e_ts_sdk.py) provoke on purpose (`deliberate`): a call of a tool it never
declared, to see the error answer."""


def security_findings(report: dict) -> list[dict]:
    """The findings of the `security` group in an `analyze --format json` report."""
    from mcptap.analysis import rules

    security = {code for code, r in rules.load().items() if r.group == "security"}
    return [f for f in report["findings"] if f["code"] in security]


def assert_no_security_findings(report: dict) -> None:
    """Real traffic with honest servers (an `analyze --format json` report of it): no finding of the
    `security` group, of any severity: the security rules raise no false alarm on honest servers."""
    found = security_findings(report)
    assert found == [], found


@pytest.fixture(scope="module")
def make_client(request):
    """plan_clients.Client(sdk, mode), with what that SDK needs to run (fixtures asked for only when used)."""
    from tests.support.plan_clients import Client

    def make(sdk: str, mode: str) -> Client:
        if sdk == "python":
            return Client(sdk, mode, sdk_python=request.getfixturevalue("sdk_python"))
        from tests.support.npm_servers import npm_tools
        return Client(sdk, mode, node=npm_tools()[0], ts_sdk=request.getfixturevalue("ts_sdk"))
    return make


def copy_database(src: Path | str, dst: Path | str) -> Path:
    """A copy of a database no process has open (its WAL too, if one was left): what a module-scoped
    fixture records once, each test gets afresh."""
    for suffix in ("", "-wal"):
        if suffix == "" or Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    return Path(dst)


FAST_TIER = frozenset({
    "wire/test_framing.py", "wire/test_jsonwire.py", "wire/test_sse.py",
    "capture/test_chunkqueue.py", "capture/test_chunkwire.py", "capture/test_auth_capture.py",
    "store/test_store.py", "store/test_writer.py", "store/test_filter.py",
    "readers/test_importer.py", "readers/test_exchangelog.py",
    "analysis/test_classify.py", "analysis/test_golden.py", "analysis/test_auth_analysis.py", "analysis/test_http_pairing.py",
    "analysis/test_latency.py", "analysis/test_rules.py", "analysis/test_transport_rules.py",
    "analysis/test_declared.py", "analysis/test_cost.py", "analysis/test_logical_operations.py",
    "analysis/test_schema_validation.py", "analysis/test_extensions.py", "analysis/test_poisoned_corpus.py",
    "faces/test_data.py", "faces/test_jsondiff.py", "faces/test_progress.py", "faces/test_sarif.py",
    "faces/test_transcript_tool_errors.py", "faces/test_quick.py", "faces/test_mcpface.py", "faces/test_audit.py",
    "faces/test_formats.py",
    "project/test_docs.py", "project/test_layout.py", "project/test_rows_by_name.py", "project/test_inprocess.py",
})
"""The modules of the fast tier (`pytest -m "not slow" -n 2`: under a minute), by their path in
tests/: no real SDK or npm server, no proxy, no hostile input at scale, no wait for a timeout (the
spool tests hold a database locked past the busy timeout), no fuzzing (analysis/test_fuzz.py), no
command driven file by file as a subprocess many times over (faces/test_diff.py, test_wrap.py).
Every other module's tests are marked `slow`, a new module's too until it is listed here."""

NIGHTLY_TIER = frozenset({"engine/test_fleet_million.py"})
"""The modules of the nightly tier, by their path in tests/: minutes each (a million generated frames
analysed by SQLite and by Spark), run only with `pytest --nightly` (or MCPTAP_NIGHTLY=1), which CI
(.ci/run) adds when the change touches the analysis engine (.ci/engine_changed). Skipped otherwise."""


def pytest_addoption(parser):
    parser.addoption("--regenerate-golden", action="store_true",
                     help="rewrite tests/golden/expected/ from the analyzer's output (tests/analysis/test_golden.py)")
    parser.addoption("--nightly", action="store_true", default=os.environ.get("MCPTAP_NIGHTLY") == "1",
                     help="run the nightly tier too (tests/conftest.py NIGHTLY_TIER: the million-frame fleet)")
    parser.addoption("--update-screenshots", action="store_true",
                     help="write the viewer's screenshots into docs/img/ (tests/faces/test_diagram.py)")


def pytest_collection_modifyitems(config, items):
    tests = TESTS.resolve()
    gone = sorted(module for module in FAST_TIER | NIGHTLY_TIER if not (tests / module).is_file())
    if gone:
        raise pytest.UsageError(f"tests/conftest.py FAST_TIER or NIGHTLY_TIER names modules that are not there: {gone}")
    nightly = config.getoption("--nightly")
    for item in items:
        path = item.path.resolve()
        module = path.relative_to(tests).as_posix() if path.is_relative_to(tests) else None
        if module not in FAST_TIER:
            item.add_marker(pytest.mark.slow)
        if module in NIGHTLY_TIER:
            item.add_marker(pytest.mark.nightly)
            if not nightly:
                item.add_marker(pytest.mark.skip(reason="the nightly tier: pytest --nightly (CI: when the engine changes)"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist (.ci/run: `-n 2`), a test marked `serial` runs, with the setup and teardown
    of its fixtures, while no other test does (those whose point is load: a hundred tees at once, a
    100 MiB line, a bound in seconds); the others run side by side. A turnstile keeps a waiting
    serial test from being starved by the others."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None or not hasattr(item.config, "workerinput"):  # not an xdist worker (a pytest it started
        # inherits the variable: tests/project/test_newer_python.py; taking the locks there deadlocked)
        yield
        return
    serial = item.get_closest_marker("serial") is not None
    shared = Path(tempfile.gettempdir()) / f"mcptap-tests-{run_id}"
    shared.mkdir(exist_ok=True)
    with open(shared / "turnstile", "a", encoding="utf-8") as turnstile, \
            open(shared / "serial", "a", encoding="utf-8") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
        finally:
            if not serial:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if serial:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
