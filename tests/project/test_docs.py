"""The README's promises stay true: its two fresh-machine commands, and .ci/run running the second."""

import re
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
