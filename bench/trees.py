"""Code trees for the benches that run a checkout of their choosing (--tree DIR, --product DIR: an
older commit to compare against): the folders to put first on PYTHONPATH so that `import mcptap`
is that tree's code, without installing it.

A tree of today's layout has no folder named `mcptap` (setup.py maps analyzer/ to the package
`mcptap` and addons/ to `mcptap.addons`), so the package is laid out once per process in a
temporary folder of symlinks to the tree's files. A tree from before the one import name (its
package is `analyzer`) is importable from its own root, which comes second."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile


def import_path(tree: str) -> list[str]:
    """The sys.path entries, first first, that import `tree`'s mcptap."""
    tree = os.path.abspath(tree)
    package = os.path.join(tree, "analyzer")
    if not os.path.isdir(package):
        return [tree]
    farm = os.path.join(tempfile.gettempdir(), "mcptap-trees",
                        f"{hashlib.sha256(tree.encode()).hexdigest()[:12]}-{os.getpid()}")
    shutil.rmtree(farm, ignore_errors=True)
    laid = os.path.join(farm, "mcptap")
    os.makedirs(laid)
    atexit.register(shutil.rmtree, farm, True)
    for entry in os.listdir(package):
        if entry != "__pycache__":
            os.symlink(os.path.join(package, entry), os.path.join(laid, entry))
    capture = os.path.join(tree, "addons")
    if os.path.isdir(capture) and not os.path.exists(os.path.join(laid, "addons")):
        os.symlink(capture, os.path.join(laid, "addons"))
    return [farm, tree]


def pythonpath(tree: str, env: dict | None = None) -> dict:
    """`env` (default: this process's) with `tree`'s mcptap first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (*import_path(tree), env.get("PYTHONPATH"))))
    return env
