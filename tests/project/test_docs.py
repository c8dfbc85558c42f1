"""The README's promises stay true (its two fresh-machine commands, and .ci/run running the
second), and the docs stay true to the code: the generated pages are current, every path a page
or docstring names exists, and `mcptap help` prints what the site shows."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.+?)\n```", text)[:2]


def test_the_readme_opens_with_the_demo_command_then_the_test_command():
    demo, tests = readme_commands()
    assert demo.startswith("python3 -m venv .venv") and demo.endswith("mcptap demo")
    assert tests.startswith("python3 -m venv .venv") and "pytest" in tests


def test_ci_runs_exactly_the_readmes_test_command():
    _, tests = readme_commands()
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def _sources() -> list[Path]:
    return [p for folder in ("analyzer", "addons", "tests", "bench", ".ci", "notebooks", "docs")
            for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".c") and "__pycache__" not in p.parts] \
        + [ROOT / "README.md"]


def test_every_document_the_code_and_docs_cite_is_in_the_repository():
    """Docstrings and pages cite docs/*.md (the contract, the findings catalog, the MCP and
    mitmproxy references, the JSON-RPC profile), never a file outside the repository."""
    cited, outside = set(), []
    for path in _sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        cited.update(re.findall(r"\bdocs/([\w.-]+\.md)\b", text))
        outside += [f"{path.relative_to(ROOT)}: {m}" for m in re.findall(r"\b(?:spec|seed)/[\w.-]+\.md\b", text)]
    assert outside == []
    assert {"contract.md", "findings.md", "rules.md", "mcp-reference.md"} <= cited
    assert [name for name in sorted(cited) if not (ROOT / "docs" / name).is_file()] == []


def test_the_readme_is_a_front_door_not_the_manual():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_the_sites_home_page_is_the_readme():
    """docs/index.md is the README with its links made relative to docs/ (copy it over after a change)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (ROOT / "docs" / "index.md").read_text(encoding="utf-8") == readme.replace("](docs/", "](")


def test_the_cli_reference_is_generated_from_the_commands():
    from mcptap.cli.clidocs import markdown

    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == markdown(), \
        "regenerate: python -m mcptap.cli.clidocs > docs/cli.md"


def test_every_command_is_in_the_cli_reference():
    import typer

    from mcptap.cli import app

    group = typer.main.get_command(app)
    names = group.list_commands(group.context_class(group, info_name="mcptap"))
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert [n for n in names if f"## mcptap {n}\n" not in page] == []


def test_mcptap_help_prints_the_pages_the_site_shows():
    from mcptap import help as topics
    from mcptap.report import ruledocs

    assert topics.text("filters") == (ROOT / "docs" / "filters.md").read_text(encoding="utf-8"), \
        "docs/filters.md and analyzer/help/filters.md are one text: copy the one you changed over the other"
    assert topics.text("findings") == ruledocs.markdown()
    done = subprocess.run([sys.executable, "-m", "mcptap", "help", "formats"], capture_output=True, timeout=60)
    assert done.returncode == 0 and b"| `har` |" in done.stdout
    done = subprocess.run([sys.executable, "-m", "mcptap", "help", "nothing"], capture_output=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"filters, findings, formats" in done.stderr


PATH_LIKE = re.compile(r"(?<![\w/.~-])((?:analyzer|addons|tests|bench|docs|notebooks|\.ci)/[\w./-]*[\w])")


ELSEWHERE = (
    "docs/specification", "docs/docs.json", "docs/extensions",  # the MCP specification's repository
    "docs/gen-ai",  # OpenTelemetry's semantic conventions repository (docs/otel.md)
)
"""Paths of other repositories that pages and docstrings cite (each beside its repository's name)."""


def test_every_path_a_page_or_docstring_names_exists():
    """A repository path named in a page, the README or a module's text (a module under analyzer/,
    a page under docs/, a folder of tests/) is there: a file moved or renamed changes what names it.
    A name ending in `_` or a capital placeholder is a pattern (a fuzz target's NAME), not a path."""
    missing = []
    for path in _sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in sorted(set(PATH_LIKE.findall(text))):
            name = name.rstrip(".")
            if name.startswith(ELSEWHERE) or name.endswith("_") or re.search(r"[A-Z]{3,}", name):
                continue
            if not (ROOT / name).exists():
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert missing == [], "\n".join(missing)
