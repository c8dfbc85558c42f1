"""The quick paths (analyzer/quick.py): `mcptap --version`, `sessions` and `show` start without
typer, pydantic, mcp-types' models or (for sessions) the analysis, and print what the typer
commands print; a command line the small parser does not take whole goes to typer; `--help` loads
typer and the commands' modules, none of the stages below them."""

from __future__ import annotations

import json
from pathlib import Path
import re
import sys

import pytest

from mcptap import quick
from tests.conftest import run
from tests.support.inprocess import cli
from tests.support.sessions import write_log

SID = "01a23348-0000-7000-8000-000000000001"
FRAMES = [
    ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
    ("s2c", {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
    ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}}),
]
HEAVY = ("typer", "click", "pydantic", "pydantic_core", "mcp_types", "importlib.metadata")
ANALYSIS = ("mcptap.engine", "mcptap.analysis.session", "mcptap.analysis.schema_validation", "mcptap.report.transcript")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quick")
    log = write_log(folder / "small.jsonl", [(d, json.dumps(m)) for d, m in FRAMES], SID, start=1796156710.01,
                    session_records={SID: {"transport": "stdio", "label": "small", "started_at": 1796156710.0,
                                           "ended_at": 1796156711.0, "exit_status": 0}})
    path = folder / "small.db"
    done = cli("import", "--db", str(path), str(log))
    assert done.returncode == 0, done.stderr
    cli("show", "--db", str(path), SID)  # the schemas' cache is written once, before the guards run
    return str(path)


def imported(*args: str) -> tuple[set[str], bytes]:
    done = run([sys.executable, "-X", "importtime", "-m", "mcptap", *args])
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.decode().splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}, done.stdout


def test_version_imports_nearly_nothing():
    modules, out = imported("--version")
    assert out.startswith(b"mcptap ")
    assert not {m for m in modules if m.startswith("mcptap.")} - {"mcptap.quick", "mcptap.options", "mcptap.__main__"}
    assert modules.isdisjoint(HEAVY + ("sqlite3",)), sorted(modules & set(HEAVY))


def test_sessions_reads_the_store_without_typer_pydantic_or_the_analysis(db):
    modules, out = imported("sessions", "--db", db)
    assert b"small" in out
    assert modules.isdisjoint(HEAVY + ANALYSIS), sorted(modules & set(HEAVY + ANALYSIS))


def test_show_of_a_conformant_session_loads_neither_typer_nor_the_schema_models(db):
    modules, out = imported("show", "--db", db, SID)
    assert b"tools/list" in out
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))


STAGES = ("mcptap.store", "mcptap.engine", "mcptap.analysis", "mcptap.readers", "mcptap.api", "mcptap.addons")


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["show", "--help"], ["analyze", "--help"]])
def test_help_loads_typer_and_the_commands_but_no_stage_sqlite3_or_schema_models(args):
    modules, out = imported(*args)
    assert b"Usage: mcptap" in out
    loaded = {m for m in modules if m.startswith(STAGES) or m.split(".")[0] in ("sqlite3", "mcp_types", "pandas")}
    assert not loaded, sorted(loaded)
    if len(args) == 1:  # a command's own help has typer coerce its options' defaults (typer >= 0.29: pydantic)
        assert modules.isdisjoint(("pydantic", "pydantic_core")), sorted(modules)


@pytest.mark.parametrize("args", [
    ["sessions"], ["sessions", "--format", "json"], ["sessions", "--json"], ["sessions", "--format=jsonl"],
    ["show", SID], ["show", SID, "--format", "jsonl"], ["show", "--full", "--no-stderr", SID],
    ["show", SID, "--max-per-code", "1", "--color"],
])
def test_the_quick_path_prints_what_the_typer_command_prints(db, args):
    argv = [args[0], "--db", db, *args[1:]]
    quick_run, typer_run = cli(*argv), cli(*argv, quick=False)
    assert quick_run.returncode == typer_run.returncode == 0, (quick_run.stderr, typer_run.stderr)
    assert _steady(quick_run.stdout) == _steady(typer_run.stdout)


def _steady(out: bytes) -> bytes:
    """The output without the time of the in-memory analysis (show's analyzed_at, analyzed)."""
    return re.sub(rb'"analyzed(_at)?":\s*("[^"]*"|[0-9.e+]+)', b'"analyzed":_', out)


@pytest.mark.parametrize("args, code", [
    (["show", "--db", "DB"], 2),  # no SESSION
    (["show", "--db", "DB", "no-such-session"], 2),
    (["sessions", "--db", "DB", "--follow", "--json"], 2),
    (["sessions", "--db", "/no/such/file.db"], 2),
])
def test_a_refused_quick_command_is_one_line_and_exit_2(db, args, code):
    done = cli(*[db if a == "DB" else a for a in args])
    assert done.returncode == code
    assert done.stderr.startswith(b"mcptap: error: ") and done.stderr.count(b"\n") == 1, done.stderr


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["--format", "yaml"], ["--max-per-code", "x"], ["--max-per-code", "-1"], ["--db"],
    ["--nope"], ["a", "b"], ["--", "a"], ["--json=1"], ["--db", "--json"],
])
def test_what_the_small_parser_does_not_take_whole_goes_to_typer(args):
    with pytest.raises(quick.NotQuick):
        quick.parse("show", args)


def test_the_small_parser_reads_options_as_typer_does(monkeypatch):
    monkeypatch.delenv("MCPTAP_DB", raising=False)
    assert quick.parse("show", ["--db=x.db", "S", "--no-stderr", "--max-per-code", "3", "-f", "--filter", "a"]) == {
        "db": "x.db", "session": "S", "fmt": "text", "as_json": False, "color": None, "follow": True, "full": False,
        "stderr": False, "max_per_code": 3, "where": "a"}
    assert quick.parse("sessions", ["--format", "json", "--format", "jsonl"])["fmt"] == "jsonl"
    assert quick.parse("sessions", [])["db"] == "mcptap.db"
    monkeypatch.setenv("MCPTAP_DB", "env.db")
    assert quick.parse("sessions", [])["db"] == "env.db"
    with pytest.raises(quick.NotQuick):
        quick.parse("sessions", ["extra"])


def test_help_is_typers_and_names_every_command():
    done = cli("--help")
    assert done.returncode == 0
    assert b"Usage: mcptap" in done.stdout and b"sessions" in done.stdout and b"analyze" in done.stdout
    show = cli("show", "--help")
    assert show.returncode == 0 and b"--max-per-code" in show.stdout


@pytest.fixture
def small_log(db, tmp_path):
    """The module's small log (the one `db` imported), beside a fresh folder for databases."""
    return str(Path(db).parent / "small.jsonl")


def test_import_with_stderr_piped_loads_neither_typer_nor_pydantic(small_log, tmp_path):
    modules, out = imported("import", "--db", str(tmp_path / "new.db"), small_log)
    assert out.startswith(b"imported session ")
    assert modules.isdisjoint(HEAVY + ANALYSIS), sorted(modules & set(HEAVY + ANALYSIS))


@pytest.mark.parametrize("args", [
    [], ["--format", "jsonl"], ["--format=json"], ["--new-id", "--format", "table"], ["--from", "jsonl"],
    ["--from", "yaml"], ["-", "-"], ["LOG", "LOG"],
])
def test_the_quick_import_prints_what_the_typer_command_prints(small_log, tmp_path, args):
    files = [small_log if a == "LOG" else a for a in args if a in ("LOG", "-")] or [small_log]
    options = [a for a in args if a not in ("LOG", "-")]
    outcomes = []
    for way, extra in (("quick", []), ("typer", ["--max-frame", "128MiB"])):  # an option of typer's alone
        path = str(tmp_path / f"{way}.db")
        done = cli("import", "--db", path, *options, *extra, *files)
        ids = re.findall(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", done.stdout)
        outcomes.append((done.returncode, _named(done.stdout, ids), done.stderr.replace(path.encode(), b"DB")))
    assert outcomes[0] == outcomes[1]


def _named(out: bytes, ids: list[bytes]) -> bytes:
    """The output with each new id (--new-id) replaced by its order of appearance."""
    for n, sid in enumerate(dict.fromkeys(ids)):
        out = out.replace(sid, b"ID%d" % n)
    return out
