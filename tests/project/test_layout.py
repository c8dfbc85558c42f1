"""The house's plan holds: one import name, `mcptap` (analyzer/ is the package, addons/ is
`mcptap.addons`, setup.py PACKAGE_DIR), and no file of the product, its tests, benches, CI or
notebooks imports the folders by their own names (which would work from a checkout only, as a
second copy of every module)."""

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("analyzer", "addons", "tests", "bench", ".ci", "notebooks")


def python_sources() -> dict[str, str]:
    """Every Python source in the repository, notebooks' code cells included, by path."""
    found = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for folder in FOLDERS for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}
    found["setup.py"] = (ROOT / "setup.py").read_text(encoding="utf-8")
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        found[str(notebook.relative_to(ROOT))] = "\n".join(
            re.sub(r"^[%!].*$", "", "".join(c["source"]), flags=re.M) for c in cells if c["cell_type"] == "code")
    return found


def imported_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


FOLDER_IMPORT = re.compile(r"\b(?:from|import) (?:analyzer|addons)\b(?![/\w])")
"""The same, written in a string: code a test or a tool hands to another interpreter."""


def test_nothing_imports_the_folders_by_their_own_names_only_mcptap():
    wrong = sorted(f"{path}: import {name}" for path, source in python_sources().items()
                   for name in imported_names(source) if name.split(".")[0] in ("analyzer", "addons"))
    wrong += sorted(f"{path}: {m.group(0)!r} in a string" for path, source in python_sources().items()
                    for m in FOLDER_IMPORT.finditer(source))
    assert wrong == []



NATIVE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".pyx", ".rs")


def test_the_only_native_file_is_the_envelope_scanner_a_function_of_bytes():
    """One session core, in Python: what is native is the envelope scanner alone (bytes in, the
    envelope out), which reads no Python object's attributes and calls back into nothing but the
    number type it is given (analyzer/_wirescan.c, `configure`)."""
    native = sorted(str(p.relative_to(ROOT)) for folder in ("analyzer", "addons") for p in (ROOT / folder).rglob("*")
                    if p.suffix in NATIVE_SUFFIXES)
    assert native == ["analyzer/_wirescan.c"]
    assert re.findall(r'Extension\("([\w.]+)"', (ROOT / "setup.py").read_text(encoding="utf-8")) == ["mcptap._wirescan"]
    source = (ROOT / "analyzer" / "_wirescan.c").read_text(encoding="utf-8")
    assert not re.findall(r"\w*(?:GetAttr|SetAttr|LookupAttr|CallMethod)\w*", source)
    assert re.findall(r"PyObject_Call\w*\((\w+)", source) == ["NUMBER_TEXT"]


def _package_of_folder() -> dict[str, str]:
    """setup.py's PACKAGE_DIR (package -> folder), as folder -> package, read from its source."""
    for node in ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PACKAGE_DIR" for t in node.targets):
            return {folder: package for package, folder in ast.literal_eval(node.value).items()}
    raise AssertionError("setup.py has no PACKAGE_DIR")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = _package_of_folder()[parts[0]]
    name = ".".join(parts)
    return name.removesuffix(".__init__")


def product_files() -> dict[str, Path]:
    """Every module of the product by its import name."""
    return {_module_name(p): p for folder in ("analyzer", "addons") for p in (ROOT / folder).rglob("*.py")
            if "__pycache__" not in p.parts}


def import_graph() -> dict[str, set[str]]:
    """Module -> the product's modules it imports, at module level or inside a function (a lazy
    import is still a dependency). `from package import module` depends on that module, not on
    the package's __init__; importing the package itself, or a name defined in it, does."""
    files = product_files()
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t for t in subs if t in files] + ([base] if any(t not in files for t in subs) else [])
            else:
                continue
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def test_the_import_graph_has_no_cycles():
    import graphlib

    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"an import cycle: {' -> '.join(exc.args[1])}") from None


FACES = ("mcptap.cli", "mcptap.quick", "mcptap.report", "mcptap.data", "mcptap.plots", "mcptap.replay", "mcptap.demo",
         "mcptap.mcpface", "mcptap.tui")


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_capture_and_readers_never_import_the_faces_and_analysis_never_touches_sqlite():
    graph, files = import_graph(), product_files()
    for name, imported in graph.items():
        if _under(name, ("mcptap.addons", "mcptap.readers")):
            assert not [t for t in imported if _under(t, FACES)], name
        if _under(name, ("mcptap.analysis",)):
            assert not [t for t in imported if _under(t, ("mcptap.store", "mcptap.engine"))], name
            assert "sqlite3" not in imported_names(files[name].read_text(encoding="utf-8")), name


SQL = re.compile(r"^\s*(?:(?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN)\s+\S|(?:COMMIT|ROLLBACK|VACUUM|BEGIN)\s*$)")
"""A string that is an SQL statement (a bare DELETE is an HTTP method)."""
OWN_DATABASES = {"mcptap.readers.importstate"}
"""Modules with a private SQLite file of their own (an import's state set aside), not the store's."""


def test_every_sql_statement_is_in_the_store():
    found = []
    for name, path in product_files().items():
        if _under(name, ("mcptap.store",)) or name in OWN_DATABASES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                found.append(f"{name}:{node.lineno}: {node.value.strip()[:60]}")
    assert not found, "SQL outside mcptap.store:\n" + "\n".join(found)


def test_the_layout_page_names_every_module_of_the_product():
    """The Layout section of docs/development.md is the tree: every folder and every module of
    analyzer/ and addons/ is named there (a module added, moved or renamed changes the page with it)."""
    readme = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    words = set(re.findall(r"[\w.]+", layout))
    missing = []
    for folder in ("analyzer", "addons"):
        for path in (ROOT / folder).rglob("*"):
            if "__pycache__" in path.parts or path.name == "__init__.py" or path.suffix not in (".py", ".c", ""):
                continue
            if path.is_dir() or path.suffix:
                name = path.stem if path.suffix == ".py" else path.name
                if name not in words:
                    missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not in docs/development.md's Layout: {missing}"


STAGES = (
    ("base", ("mcptap.wire", "mcptap.errors", "mcptap.ids", "mcptap.options", "mcptap.extras", "mcptap.origins",
              "mcptap.outfile")),
    ("store", ("mcptap.store", "mcptap.redaction")),
    ("capture and analysis", ("mcptap.addons", "mcptap.analysis")),
    ("readers and engine", ("mcptap.readers", "mcptap.engine", "mcptap.redaction.scrub")),
    ("faces", ("mcptap.api", "mcptap.__main__", "mcptap.cli", "mcptap.quick", "mcptap.record", "mcptap.proxy", "mcptap.report", "mcptap.data",
               "mcptap.dataio", "mcptap.dataparquet", "mcptap.datalatency", "mcptap.plots", "mcptap.replay", "mcptap.demo",
               "mcptap.hostconfig", "mcptap.help", "mcptap.mcpface", "mcptap.tui", "mcptap.dataruns")),
)
"""The stages from the bottom up (the README's Layout: wire to capture to store to analysis to
the library to faces): a module imports from its own folder and from the stages below; between
folders of one stage only the base and the faces import each other. `mcptap redact` rewrites a
database written already: its module (redaction.scrub) is a stage above the rest of redaction.
The library (mcptap.api), the calls the faces make, is of the faces' stage: it writes through the
format registry (mcptap.report.formats), which the faces share."""


def _stage_of(name: str) -> tuple[int, str]:
    """The stage of a module and the folder (or module) of STAGES it is in: the longest that holds it."""
    found = [(len(prefix), rank, prefix) for rank, (_, prefixes) in enumerate(STAGES) for prefix in prefixes
             if _under(name, (prefix,))]
    assert found, f"{name} is in no stage of STAGES"
    return max(found)[1:]


def test_every_module_imports_only_its_own_folder_and_the_stages_below():
    wrong = []
    for name, imported in import_graph().items():
        if name == "mcptap":
            continue  # the package's __init__: its version
        rank, folder = _stage_of(name)
        for target in imported:
            if target == "mcptap":
                continue
            target_rank, target_folder = _stage_of(target)
            same_stage_ok = STAGES[rank][0] in ("base", "faces")
            if target_rank > rank or (target_rank == rank and target_folder != folder and not same_stage_ok):
                wrong.append(f"{name} ({STAGES[rank][0]}) imports {target} ({STAGES[target_rank][0]})")
    assert not wrong, "\n".join(wrong)


THROUGH_THE_LIBRARY = ("mcptap.cli", "mcptap.dataio", "mcptap.demo.run")
"""The faces whose import, analysis, baseline and cost go through the library (mcptap.api)."""


def test_the_commands_reach_the_readers_and_the_engine_through_the_library():
    graph = import_graph()
    wrong = sorted(f"{name} imports {target}" for name, imported in graph.items()
                   if _under(name, THROUGH_THE_LIBRARY)
                   for target in imported if _under(target, ("mcptap.engine", "mcptap.readers")))
    assert not wrong, "\n".join(wrong)
    assert [n for n in graph if _under(n, ("mcptap.cli",)) and "mcptap.api" in graph[n]]


MAX_LINES = 420
"""About 400 lines at most to a module: one concern, read in one sitting."""


def test_no_module_of_the_product_is_over_about_400_lines():
    long = {name: n for name, path in product_files().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
