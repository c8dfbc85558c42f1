"""The README's promises stay true: its two fresh-machine commands, and .ci/run running the second."""

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


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
