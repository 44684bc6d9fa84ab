"""Every API message class groupkit knows, found by importing ``groupkit.protocol.messages``."""

from __future__ import annotations

import importlib
import pkgutil

import groupkit.protocol.messages as messages
from groupkit.protocol.schema import Request


def _discover() -> dict[int, type[Request]]:
    found: dict[int, type[Request]] = {}
    for info in pkgutil.iter_modules(messages.__path__):
        module = importlib.import_module(f"{messages.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Request) and value is not Request \
                    and hasattr(value, "API_KEY"):
                found[value.API_KEY] = value
    return found


#: API key -> request class (its ``Response`` attribute is the response class).
REQUESTS: dict[int, type[Request]] = _discover()
