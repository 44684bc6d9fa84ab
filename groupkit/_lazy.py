"""The module ``__getattr__`` and ``__dir__`` (PEP 562) of a package whose names load on first use.

``groupkit``, ``groupkit.config``, ``groupkit.group``, ``groupkit.protocol`` and
``groupkit.protocol.records`` each keep a table of their public names' home modules, the
``TYPE_CHECKING`` imports that give type checkers the same names, and ``__all__``; this module
makes the two functions they answer with. It imports nothing of groupkit's and nothing that
``import groupkit`` does not load already.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(namespace: dict[str, Any], homes: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``homes`` maps each name to the module it is read from. A name is imported at its first use
    and kept in ``namespace``, so Python finds it there afterwards without asking again; a name
    not in ``homes`` is an AttributeError worded as Python words its own. ``__dir__`` is the
    package's ``__all__``, sorted.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(home), name)
        return value

    def __dir__() -> list[str]:
        return sorted(namespace["__all__"])

    return __getattr__, __dir__
