"""The one compiled part: the HFile cell walker (metadata/mdt/_cells.c).
It is optional: without a C compiler the install goes on and the reader
walks cells in Python (`metadata.mdt.hfile_cells`), slower, with the same
results. Everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("metadata.mdt._cells", ["metadata/mdt/_cells.c"], optional=True, extra_compile_args=["-O3"])])
