"""Build hook: the optional C record loops and producer accumulator (csrc/, one file per job).

Everything else is declared in pyproject.toml. The extension is ``optional``: where there is
no C compiler or no Python headers, setuptools warns and installs groupkit without it, and
groupkit.protocol.records reads records in pure Python (``groupkit.protocol.native_available``
says which).
"""

from pathlib import Path

from setuptools import Extension, setup

# Sorted so the build does not depend on the directory's listing order.
SOURCES = sorted(str(p) for p in Path("csrc").glob("*.c"))

setup(ext_modules=[Extension("groupkit.protocol._native", SOURCES, include_dirs=["csrc"],
                             depends=["csrc/native.h"], optional=True,
                             extra_compile_args=["-O2"])])
