"""Makes the recording the notebooks read, and re-executes them in place (outputs saved).

    python notebooks/regenerate.py            # recording.db and incident.jsonl here, then both notebooks

The recording is `mcptap demo`'s: the bundled stdio server through the tee and the bundled HTTP
server through the proxy, both making one mistake on purpose. The incident log is the HTTP
session exported as frame-log JSONL, as if someone had sent it in after an incident. Tests
(tests/test_notebooks.py) run the same steps in a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOKS = ("explore.ipynb", "incident-audit.ipynb")
TIMEOUT_S = 300


def make_recording(folder: Path) -> tuple[Path, Path]:
    """recording.db (the demo's two sessions) and incident.jsonl (its HTTP session) in `folder`."""
    db, log = folder / "recording.db", folder / "incident.jsonl"
    for stale in folder.glob("recording*"):
        stale.unlink()
    mcptap = [sys.executable, "-m", "analyzer"]
    subprocess.run([*mcptap, "demo", "--db", str(db)], check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT_S)
    subprocess.run([*mcptap, "export", "--db", str(db), "--session", "demo-http", "-o", str(log)], check=True,
                   stdout=subprocess.DEVNULL, timeout=TIMEOUT_S)
    return db, log


def execute(notebook: Path, folder: Path, db: Path, log: Path, *, save_to: Path | None = None) -> None:
    """Run every cell (an error in one fails the run); save the executed notebook to `save_to`."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    env = {"MCPTAP_NOTEBOOK_DB": str(db), "MCPTAP_NOTEBOOK_LOG": str(log), "MCPTAP_NOTEBOOK_WORK": str(folder)}
    os.environ.update(env)  # the kernel inherits them
    NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    if save_to is not None:
        nbformat.write(nb, save_to)


def main() -> None:
    db, log = make_recording(HERE)
    for name in NOTEBOOKS:
        execute(HERE / name, HERE, db, log, save_to=HERE / name)
        print(f"executed {name}")


if __name__ == "__main__":
    main()
