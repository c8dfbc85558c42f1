"""The HTTP capture on the other mitmproxy line: Python 3.12+ gets mitmproxy 12.x (3.11 gets
11.0.2, which this suite's own interpreter runs). Where a python3.12 exists, mcptap is installed
into a cached virtual environment of it and the HTTP tests run there, as a subprocess."""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CACHE

ROOT = Path(__file__).resolve().parents[2]
# the modules that run mitmproxy itself (the tap, the proxy, the recorder behind it): what differs
# between mitmproxy 11 and 12; the pure SSE, transport-rule, replay and serve code is the same
HTTP_TESTS = ["tests/capture/test_http_recorder.py", "tests/e2e/test_proxy_e2e.py",
              "tests/e2e/test_e2e_everything_http.py"]
RUNNER = ["pytest>=8"]
"""What the HTTP_TESTS need beside mcptap[proxy] (not the whole [test]: Spark, pyarrow, OpenTelemetry and the
browser driver have nothing to do with mitmproxy's line, and would make the 3.12 environment many times larger)."""
INSTALL_TIMEOUT_S = 600
RUN_TIMEOUT_S = 900


def working_python(minor: int) -> str | None:
    """A python3.<minor> that runs (a pyenv shim may name a version that is not enabled)."""
    candidates = [shutil.which(f"python3.{minor}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[1])"], capture_output=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip() == str(minor).encode():
            return candidate
    return None


def venv_for(python: str) -> Path:
    """mcptap[proxy] and pytest installed (mcptap editable) for `python`. The dependencies are cached
    by the pyproject they came from; mcptap itself is installed again, without them, whenever the
    cached one is another checkout's (an editable install maps its packages to the folder it was
    made from: a CI clone at a new path would otherwise run a deleted or older clone's code)."""
    stamp = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    venv = CACHE / f"mcptap-py312-{stamp}"
    ready = venv / ".ready"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not ready.exists():
        subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True, timeout=INSTALL_TIMEOUT_S)
        subprocess.run([*pip, "-e", f"{ROOT}[proxy]", *RUNNER], check=True, stdout=subprocess.DEVNULL,
                       timeout=INSTALL_TIMEOUT_S)
        ready.write_text(sys.version + "\n", encoding="utf-8")
    if installed_from(venv) != ROOT:
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True, stdout=subprocess.DEVNULL,
                       timeout=INSTALL_TIMEOUT_S)
    assert installed_from(venv) == ROOT, f"{venv} does not import mcptap from {ROOT}"
    return venv


def installed_from(venv: Path) -> Path | None:
    """The checkout whose `mcptap` package `venv` imports, asked from outside any checkout."""
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import mcptap; print(mcptap.__file__)"],
                          capture_output=True, cwd="/", timeout=60)
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode().strip()).resolve().parent.parent


def test_the_http_capture_tests_pass_under_python_3_12_with_mitmproxy_12():
    python = working_python(12)
    if python is None:
        pytest.skip("no working python3.12 on this machine")
    venv = venv_for(python)
    version = subprocess.run([str(venv / "bin" / "python"), "-c", "import mitmproxy.version as v; print(v.VERSION)"],
                             capture_output=True, timeout=60)
    assert version.stdout.decode().startswith("12."), version.stdout + version.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # a pytest of its own, not a worker's
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *HTTP_TESTS],
                          cwd=ROOT, capture_output=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-4000:] + done.stderr.decode(errors="replace")[-2000:]
