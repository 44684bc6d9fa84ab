"""Every API message class groupkit knows, by API key, imported when first asked for.

``MODULES`` names the module under ``groupkit.protocol.messages`` that declares each API's
request class; ``request_class`` imports it on first use, so a client loads the schemas of the
APIs it sends and no others (building the classes is most of what importing a schema costs: a
Producer needs four of seventeen). ``REQUESTS`` holds the classes loaded so far, ``load_all()``
every one. tests/protocol/test_registry.py holds ``MODULES`` to the modules' own API keys, so
a new API's module must be named here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from groupkit.protocol.schema import Request

_PACKAGE = "groupkit.protocol.messages"

#: API key -> the module of ``groupkit.protocol.messages`` that declares its request class.
MODULES: dict[int, str] = {
    0: "produce",
    1: "fetch",
    2: "list_offsets",
    3: "metadata",
    8: "offset_commit",
    9: "offset_fetch",
    10: "find_coordinator",
    11: "group",
    12: "group",
    13: "group",
    14: "group",
    15: "describe_groups",
    16: "list_groups",
    17: "sasl",
    18: "api_versions",
    19: "create_topics",
    20: "delete_topics",
    22: "init_producer_id",
    24: "txn",
    25: "txn",
    26: "txn",
    28: "txn",
    36: "sasl",
    42: "delete_groups",
    47: "offset_delete",
    68: "consumer_group",
    69: "consumer_group",
    76: "share_group",
    77: "share_group",
    78: "share_fetch",
    79: "share_fetch",
}

#: API key -> request class, for the modules loaded so far (its ``Response`` attribute is the
#: response class).
REQUESTS: dict[int, type[Request]] = {}


def requests_of(module: ModuleType) -> dict[int, type[Request]]:
    """The request classes a message module declares, by API key."""
    return {value.API_KEY: value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Request) and value is not Request
            and hasattr(value, "API_KEY")}


def request_class(api_key: int) -> type[Request]:
    """The request class of ``api_key``, its module imported if need be; KeyError if groupkit
    has no schema for it."""
    cls = REQUESTS.get(api_key)
    if cls is None:
        module = MODULES[api_key]
        REQUESTS.update(requests_of(importlib.import_module(f"{_PACKAGE}.{module}")))
        cls = REQUESTS[api_key]
    return cls


def load_all() -> dict[int, type[Request]]:
    """Every request class groupkit has, by API key (imports every message module)."""
    for api_key in MODULES:
        request_class(api_key)
    return REQUESTS
