"""Build hook: the optional C record loops and producer accumulator (groupkit/protocol/_native.c).

Everything else is declared in pyproject.toml. The extension is ``optional``: where there is
no C compiler or no Python headers, setuptools warns and installs groupkit without it, and
groupkit.protocol.records reads records in pure Python (``groupkit.protocol.native_available``
says which).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("groupkit.protocol._native", ["groupkit/protocol/_native.c"],
                             optional=True, extra_compile_args=["-O2"])])
