"""Whether the C record reader (groupkit.protocol._native, built from csrc/) is built and in use.

The extension is built at install when the machine has a C compiler and Python's headers;
without it, or with the environment variable ``GROUPKIT_NO_NATIVE`` set to a non-empty value,
records are read and written in pure Python (same results, about a third of the speed) and
checksummed by the crc32c package.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("GROUPKIT_NO_NATIVE"):
        return None
    try:
        from groupkit.protocol import _native
    except ImportError:
        return None
    return _native


module = _load()
available = module is not None
"""True when the record-batch v2 read path runs in C."""


def _crc32c() -> Callable[[bytes | bytearray | memoryview], int]:
    if module is not None:
        return module.crc32c
    from crc32c import crc32c as packaged

    return packaged


crc32c = _crc32c()
"""CRC-32C of a bytes-like object: the extension's, or the crc32c package's without it."""
