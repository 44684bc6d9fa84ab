"""Fresh-process rows measure groupkit as installed: with its modules' bytecode compiled.

pip compiles a wheel's modules to bytecode when it installs it (the peers' are, in the venv's
site-packages), but this checkout is an editable install, and with PYTHONDONTWRITEBYTECODE set
(as it is on the project machine) Python never writes the bytecode of its sources, so every new
process compiled all of groupkit again: about 0.1 s more per import, which no installed user
pays. The rows that time a fresh process's import compile the sources first, once.
"""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_sources() -> None:
    """Write the bytecode of groupkit's and the assignors' modules (as pip does on install)."""
    for package in ("groupkit", "assignors"):
        compileall.compile_dir(str(ROOT / package), quiet=1)
