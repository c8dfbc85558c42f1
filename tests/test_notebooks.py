"""The notebooks in notebooks/ run headless (nbclient) against a freshly recorded database: any
cell error fails the test. The committed notebooks are executed the same way by
notebooks/regenerate.py, which also makes the recording they show."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _regenerate():
    spec = importlib.util.spec_from_file_location("regenerate", NOTEBOOKS / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebooks")
    db, log = _regenerate().make_recording(folder)
    return folder, db, log


@pytest.mark.parametrize("name", ["explore.ipynb", "incident-audit.ipynb"])
def test_the_notebook_runs_every_cell_against_a_fresh_recording(recording, name):
    folder, db, log = recording
    executed = folder / name
    _regenerate().execute(NOTEBOOKS / name, folder, db, log, save_to=executed)
    assert executed.exists()


def test_the_committed_notebooks_carry_their_outputs():
    import nbformat

    for name in ("explore.ipynb", "incident-audit.ipynb"):
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.execution_count for c in code), name
        assert any(o.get("output_type") == "error" for c in code for o in c.outputs) is False
    explore = nbformat.read(NOTEBOOKS / "explore.ipynb", as_version=4)
    assert any("image/png" in o.get("data", {}) for c in explore.cells for o in c.get("outputs", []))
