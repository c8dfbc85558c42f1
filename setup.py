"""What pyproject.toml cannot say: the folders that are the package, and the optional native parts
of `mcptap analyze`; everything else is in pyproject.toml.
- the one import name is `mcptap`: analyzer/ is the package `mcptap`, addons/ (the capture) is
  `mcptap.addons`; every package under either folder goes into the wheel, found, never listed;
- analyzer/_wirescan.c: the envelope scanner (bytes in, a frame's envelope out), `optional=True`:
  without a C compiler the install goes on and every frame takes the exact parser (the same
  results, slower)."""

from setuptools import Extension, find_packages, setup

PACKAGE_DIR = {"mcptap": "analyzer", "mcptap.addons": "addons"}


def packages() -> list[str]:
    """Every package under the folders of PACKAGE_DIR, by its name under `mcptap`."""
    found = []
    for name, folder in PACKAGE_DIR.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


setup(packages=packages(), package_dir=PACKAGE_DIR, ext_modules=[
    Extension("mcptap._wirescan", ["analyzer/_wirescan.c"], optional=True, extra_compile_args=["-O2"]),
])
