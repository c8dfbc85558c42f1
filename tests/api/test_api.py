"""The library (mcptap.api): every public call documented and on docs/api.md, importing it costs
almost nothing, and its calls import, analyse and write as the commands do."""

from __future__ import annotations

import contextlib
import gzip
import inspect
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap import api
from mcptap.errors import AnalysisError, MCPTapError

ROOT = Path(__file__).resolve().parents[2]
SID = "01a24c55-0000-7000-8000-0000000000a1"
FRAMES = [
    ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
    ("s2c", {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
    ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),  # never answered: missing-response
]


def write_log(path: Path, sid: str = SID) -> Path:
    lines = [{"record": "session", "session": sid, "transport": "stdio", "label": "small", "started_at": 1796156710.0,
              "ended_at": 1796156711.0, "exit_status": 0}]
    lines += [{"session": sid, "seq": n, "ts": 1796156710.0 + n / 100, "direction": d, "raw": json.dumps(m)}
              for n, (d, m) in enumerate(FRAMES, 1)]
    text = "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")
    path.write_bytes(gzip.compress(text) if path.suffix == ".gz" else text)
    return path


def test_every_public_name_has_a_docstring_and_a_line_on_the_api_page():
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `(\w+)", page, flags=re.M))
    assert sorted(api.__all__) == sorted(named)
    for name in api.__all__:
        value = getattr(api, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert (value.__doc__ or "").strip(), name


def test_importing_the_library_loads_nothing_but_itself_and_the_standard_library():
    code = ("import sys; before = set(sys.modules); import mcptap.api; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(done.stdout.split())
    ours = {m for m in loaded if m.startswith("mcptap")}
    assert ours <= {"mcptap", "mcptap.errors", *(f"mcptap.api{part}" for part in (
        "", ".databases", ".exporting", ".judging", ".meters", ".pages", ".servers"))}, sorted(ours)
    assert not {m for m in loaded if m.split(".")[0] in ("sqlite3", "typer", "pydantic", "pandas", "orjson",
                                                         "mcp_types")}, sorted(loaded)


def test_import_analyse_and_write_as_the_commands_do(tmp_path):
    db = api.open_db(tmp_path / "a.db")
    done = list(api.import_files(db, [str(write_log(tmp_path / "small.jsonl.gz"))]))
    ((path, imported, how),) = done
    assert path.endswith("small.jsonl.gz") and how.name == "jsonl"
    assert [(s.id, s.frames) for s in imported] == [(SID, len(FRAMES))]
    assert api.sessions(db) == [SID] and api.sessions(db, ["small"]) == [SID]
    assert [(s["id"], s["label"], s["frames"]) for s in api.session_list(db)] == [(SID, "small", len(FRAMES))]
    with api.analyze(db) as analysis:
        out = io.StringIO()
        api.write_analysis(analysis, out, "json")
        codes = {f["code"] for s in json.loads(out.getvalue())["sessions"] for f in s.get("findings", ())} \
            or {f.code for f in analysis.report.findings}
        assert "missing-response" in codes
        assert api.reaches(analysis, "error") is any(f.severity == "error" for f in analysis.report.findings)
        assert not api.reaches(analysis, "never")
    with api.analyze(db, ignore=["missing-response"]) as quiet:
        assert "missing-response" not in {f.code for f in quiet.report.findings}
    assert api.export_log(db, tmp_path / "out.jsonl") == len(FRAMES)


def test_files_are_analysed_in_a_temporary_database_removed_on_close(tmp_path):
    log = write_log(tmp_path / "small.jsonl")
    with api.analyze(files=[str(log)]) as analysis:
        temporary = analysis.db
        assert os.path.isfile(temporary) and list(analysis.sources) == [SID]
        assert analysis.sources[SID].path == str(log)
    assert not os.path.exists(temporary)


@pytest.mark.parametrize("call", [
    lambda db, log: api.analyze(db, revision="1999-01-01"),
    lambda db, log: api.analyze(db, files=[log], sessions=["small"]),
    lambda db, log: api.analyze(db, engine="mainframe"),
    lambda db, log: api.analyze(db, master="spark://x:7077"),
    lambda db, log: api.baseline(db, ["no-such-server"]),
], ids=["revision", "files-and-sessions", "engine", "master-alone", "baseline-server"])
def test_options_that_do_not_go_together_are_an_analysis_error(tmp_path, call):
    log = str(write_log(tmp_path / "small.jsonl"))
    db = api.open_db(tmp_path / "a.db")
    with pytest.raises(AnalysisError):
        call(db, log)


def test_what_fails_before_the_first_file_is_read_fails_at_the_call(tmp_path):
    db = api.open_db(tmp_path / "a.db")
    with pytest.raises(MCPTapError, match="can be read once"):
        api.import_files(db, ["-", "-"])
    not_a_log = tmp_path / "notes.txt"
    not_a_log.write_bytes(b"\x00\x01 not frames")
    with pytest.raises(MCPTapError):
        api.import_files(db, [str(not_a_log)])  # no iteration: the format is known at the call
    assert api.sessions(db) == []


def test_a_log_of_one_session_is_imported_into_a_temporary_database(tmp_path):
    log = write_log(tmp_path / "small.jsonl")
    with contextlib.ExitStack() as cleanup:
        db, sid = api.session_of_log(str(log), cleanup=cleanup)
        assert sid == SID and os.path.isfile(db)
    assert not os.path.exists(db)


def test_export_writes_the_frames_a_filter_selects_and_refuses_a_format_that_cannot_hold_the_session(tmp_path):
    db = api.open_db(tmp_path / "a.db")
    list(api.import_files(db, [str(write_log(tmp_path / "small.jsonl"))]))
    assert api.is_database(db) and not api.is_database(tmp_path / "small.jsonl")
    assert api.export_log(db, tmp_path / "requests.jsonl", where='method == "tools/list"') == 1
    with pytest.raises(MCPTapError):
        api.export_log(db, tmp_path / "s.har", format="har")  # a stdio session: HAR holds HTTP ones
    assert not (tmp_path / "s.har").exists()
    with pytest.raises(MCPTapError):
        api.export_log(db, tmp_path / "x.json", format="otlp", where='method == "tools/list"')
    with pytest.raises(MCPTapError):
        api.send_otlp(db, "ftp://127.0.0.1:1")


def test_sessions_not_analysed_are_analysed_once_and_a_read_only_file_only_warned_of(tmp_path):
    db = api.open_db(tmp_path / "a.db")
    list(api.import_files(db, [str(write_log(tmp_path / "small.jsonl"))]))
    os.chmod(db, 0o444)
    said = []
    try:
        if not os.access(db, os.W_OK):  # root writes any file
            assert api.analyze_missing(db, warn=said.append) == [] and len(said) == 1
    finally:
        os.chmod(db, 0o644)
    assert api.analyze_missing(db) == [SID]
    assert api.analyze_missing(db) == []
