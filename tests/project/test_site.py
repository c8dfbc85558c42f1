"""The documentation is a site: `mkdocs build --strict` (mkdocs.yml, docs/) passes, so no page
has a broken link or anchor and every page is in the navigation."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_site_builds_strictly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
    assert (tmp_path / "site" / "rules" / "index.html").is_file()
