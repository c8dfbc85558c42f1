"""Executes the notebooks where they are, as in a fresh clone; with --save, re-records their data and writes them back.

    python notebooks/regenerate.py           # execute both and check them; writes nothing tracked
    python notebooks/regenerate.py --save    # re-record the demo, execute both, write them back with outputs

Each notebook's first cell makes the data it reads when it is missing (analyzer/demo/notebooks.py):
`mcptap demo` records recording.db into this folder (the bundled stdio server through the tee, the
bundled HTTP server through the proxy, each making one mistake on purpose), and incident.jsonl is
its HTTP session exported as frame-log JSONL, as if someone had sent it in after an incident. All of
it is git-ignored. The check: every cell ran without an error, and no output shows a traceback or a
path of this machine. --save writes only when both notebooks pass it.
tests/faces/test_notebooks.py runs the same execution in a fresh clone."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOKS = ("explore.ipynb", "incident-audit.ipynb")
DATA = ("recording.db*", ".recording.partial.db*", "incident.jsonl", ".incident.partial.jsonl", "incident.db*",
        "audit-*")
"""What the notebooks make in their folder (all git-ignored): --save removes it to record afresh."""
TIMEOUT_S = 300


def execute(notebook: Path):
    """The notebook executed top to bottom in its own folder by a kernel of this interpreter's environment
    (sys.executable's ipykernel, whatever kernel specs are installed), with none of the MCPTAP_NOTEBOOK_*
    overrides: it reads its own data. A failing cell raises nbclient's CellExecutionError."""
    import nbformat
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    # no kernel directories: "python3" is then ipykernel's own spec, which starts sys.executable
    km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPTAP_NOTEBOOK_")}
    client = NotebookClient(nb, km=km, timeout=TIMEOUT_S, record_timing=False,
                            resources={"metadata": {"path": str(notebook.parent)}})
    client.execute(cleanup_kc=True, env=env)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps: noise in every diff
    return nb


def machine_paths() -> list[str]:
    """Paths of this machine that a committed output must not show."""
    return sorted({str(HERE.parent), str(Path.home()), tempfile.gettempdir(), sys.prefix, os.getcwd()} - {"/"})


def problems(nb, paths: list[str]) -> list[str]:
    """What is wrong with an executed notebook's outputs: an unexecuted code cell, an error, a traceback,
    one of `paths`."""
    found = []
    for number, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code":
            continue
        if not cell.get("execution_count"):
            found.append(f"cell {number} was not executed")
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"cell {number} ended in {output.get('ename')}")
            texts = [output.get("text", "")] + [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
            text = "".join("".join(t) if isinstance(t, list) else t for t in texts)
            if "Traceback" in text:
                found.append(f"cell {number} shows a traceback")
            found += [f"cell {number} shows the path {p}" for p in paths if p in text]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true",
                        help="re-record the demo and write both notebooks back with their outputs")
    args = parser.parse_args(argv)
    from nbclient.exceptions import CellExecutionError

    if args.save:
        for pattern in DATA:
            for stale in HERE.glob(pattern):
                stale.unlink()
    executed, failed = {}, False
    for name in NOTEBOOKS:
        try:
            executed[name] = nb = execute(HERE / name)
        except CellExecutionError as exc:
            print(f"{name}: a cell failed: {exc.ename}: {exc.evalue}", file=sys.stderr)
            failed = True
            continue
        for problem in problems(nb, machine_paths()):
            print(f"{name}: {problem}", file=sys.stderr)
            failed = True
        print(f"executed {name}")
    if failed:
        print("nothing written" if args.save else "the notebooks need attention", file=sys.stderr)
        return 1
    if args.save:
        import nbformat

        for name, nb in executed.items():
            nbformat.write(nb, HERE / name)
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
