"""The optional native part: analyzer/_wirescan.c (the envelope scanner of `mcptap analyze`).
Everything else is in pyproject.toml. `optional=True`: without a C compiler the install goes on
and the analyzer takes its pure-Python path (the same results, slower)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("analyzer._wirescan", ["analyzer/_wirescan.c"], optional=True,
                             extra_compile_args=["-O2"])])
