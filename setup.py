"""Build hook: the optional C extensions, one per package (csrc/ and csrc/assignors/, one file
per job).

Everything else is declared in pyproject.toml. Both extensions are ``optional``: where there is
no C compiler or no Python headers, setuptools warns and installs groupkit without them, and
groupkit.protocol.records reads records in pure Python (``groupkit.protocol.native_available``
says which) and the sticky assignors run their Python loops (``assignors.sticky_loops.active``).
"""

from pathlib import Path

from setuptools import Extension, setup

# Sorted so the build does not depend on the directory's listing order.
SOURCES = sorted(str(p) for p in Path("csrc").glob("*.c"))
ASSIGNOR_SOURCES = sorted(str(p) for p in Path("csrc/assignors").glob("*.c"))

setup(ext_modules=[
    Extension("groupkit.protocol._native", SOURCES, include_dirs=["csrc"],
              depends=["csrc/native.h"], optional=True, extra_compile_args=["-O2"]),
    Extension("assignors._native", ASSIGNOR_SOURCES, include_dirs=["csrc/assignors"],
              depends=["csrc/assignors/assignors.h"], optional=True, extra_compile_args=["-O2"]),
])
