"""The notebooks in notebooks/ run top to bottom in a fresh clone with nothing run before them (nbclient,
as notebooks/regenerate.py executes them), and leave the clone as clean as they found it; the
committed ones carry their outputs, free of errors and of this machine's paths."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from mcptap import store

from mcptap.readers import importer
from mcptap.demo import notebooks as data

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
GIT_TIMEOUT_S = 60


def _regenerate():
    spec = importlib.util.spec_from_file_location("regenerate", NOTEBOOKS / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_S).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A real clone of the committed HEAD (what a new user gets), nothing run in it."""
    folder = tmp_path_factory.mktemp("clone") / "mcptap"
    _git("clone", "--quiet", "--no-checkout", str(ROOT), str(folder), cwd=ROOT)
    _git("checkout", "--quiet", _git("rev-parse", "HEAD", cwd=ROOT).strip(), cwd=folder)
    return folder


def test_every_notebook_runs_top_to_bottom_in_a_fresh_clone_and_leaves_it_clean(clone):
    regenerate = _regenerate()
    names = sorted(p.name for p in (clone / "notebooks").glob("*.ipynb"))
    assert names == sorted(regenerate.NOTEBOOKS)
    for name in names:  # the first records the demo into the folder, the second finds it there
        nb = regenerate.execute(clone / "notebooks" / name)  # a failing cell raises CellExecutionError
        assert regenerate.problems(nb, [str(clone)]) == [], name
    assert (clone / "notebooks" / "recording.db").exists()
    assert _git("status", "--porcelain", "--untracked-files=all", cwd=clone) == ""


def test_the_committed_notebooks_carry_their_outputs():
    import nbformat

    regenerate = _regenerate()
    for name in regenerate.NOTEBOOKS:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        assert [c for c in nb.cells if c.cell_type == "code"], name
        assert regenerate.problems(nb, regenerate.machine_paths()) == [], name
    explore = nbformat.read(NOTEBOOKS / "explore.ipynb", as_version=4)
    assert any("image/png" in o.get("data", {}) for c in explore.cells for o in c.get("outputs", []))


def test_the_audit_notebook_calls_only_the_public_api_and_draws_both_findings_of_the_http_log_on_a_timeline():
    import ast

    import nbformat

    audit = nbformat.read(NOTEBOOKS / "incident-audit.ipynb", as_version=4)
    code = [c for c in audit.cells if c.cell_type == "code"]
    source = "\n".join("\n".join(line for line in c.source.splitlines() if not line.startswith("%")) for c in code)
    imported = {a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names} | {
        n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert imported == {"pathlib", "mcptap.data", "mcptap.plots", "mcptap.demo.notebooks"}
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "notification-not-accepted" in shown and "bad-jsonrpc-version" in shown  # the exchanges came along


def test_a_notebook_reads_the_recording_MCPTAP_NOTEBOOK_DB_names_and_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPTAP_NOTEBOOK_DB", str(tmp_path / "mine.db"))
    assert data.recording(tmp_path) == str(tmp_path / "mine.db")
    assert list(tmp_path.iterdir()) == []


def test_the_incident_log_is_exported_from_the_recording_already_in_the_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MCPTAP_NOTEBOOK_LOG", raising=False)
    lines = [{"record": "session", "session": "s-http", "transport": "http", "label": "demo-http", "started_at": 1.0},
             {"session": "s-http", "seq": 1, "ts": 1.5, "direction": "c2s", "raw": '{"jsonrpc":"2.0","method":"x"}'}]
    (tmp_path / "given.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    conn = store.connect(str(tmp_path / "recording.db"))
    importer.import_file(conn, str(tmp_path / "given.jsonl"))
    conn.close()
    log = Path(data.incident_log(tmp_path))
    assert log == tmp_path / "incident.jsonl"
    exported = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r.get("session"), r.get("seq")) for r in exported] == [("s-http", None), ("s-http", 1)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["given.jsonl", "incident.jsonl", "recording.db"]
