"""The optional native parts of `mcptap analyze`; everything else is in pyproject.toml.
- analyzer/_wirescan.c: the envelope scanner and the session core's fast path;
- analyzer/_rowio.c: SQLite connections that read frames and write analysis rows (links SQLite).
Both are `optional=True`: without a C compiler, or without SQLite's headers, the install goes on
and the analyzer takes its pure-Python path for what is missing (the same results, slower)."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("analyzer._wirescan", ["analyzer/_wirescan.c"], optional=True, extra_compile_args=["-O2"]),
    Extension("analyzer._rowio", ["analyzer/_rowio.c"], optional=True, libraries=["sqlite3"],
              extra_compile_args=["-O2"]),
])
