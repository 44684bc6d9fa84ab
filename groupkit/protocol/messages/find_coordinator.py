"""FindCoordinator (key 10): which broker coordinates a group or transactional id.

Versions 0-3 look up one key; version 4 (KIP-699) batches keys in ``coordinator_keys`` and
answers with one ``coordinators`` entry per key. Versions 5 and 6 change no fields (they allow
new error codes and the share key type).
"""

from __future__ import annotations

import attrs

from groupkit.errors import ApiKey, FieldVersionError
from groupkit.protocol.schema import (
    INT8,
    INT16,
    INT32,
    STRING,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
)

#: ``key_type`` values.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2


@message(api_key=ApiKey.FIND_COORDINATOR, versions="0-6", flexible="3+")
class FindCoordinatorRequest(Request):
    """Set ``key``, ``coordinator_keys`` or both (naming the same key): like Kafka's request
    builder, encoding moves a single key into the shape the version carries."""

    key: str = f(STRING, versions="0-3")
    key_type: int = f(INT8, versions="1+", feature="a transaction coordinator (key_type)")
    coordinator_keys: list[str] = f(Array(STRING), versions="4+")

    def for_version(self, version: int) -> FindCoordinatorRequest:
        if version >= 4:
            if not self.key:
                return self
            if not self.coordinator_keys:
                return attrs.evolve(self, key="", coordinator_keys=[self.key])
            if self.key in self.coordinator_keys:
                return attrs.evolve(self, key="")
            raise FieldVersionError(
                f"FindCoordinatorRequest.key {self.key!r} is not among its coordinator_keys;"
                " name the keys in one place")
        if not self.coordinator_keys:
            return self
        if len(self.coordinator_keys) > 1:
            raise FieldVersionError(
                f"FindCoordinator v{version} looks up one key, not {len(self.coordinator_keys)};"
                " send one request per key or use version 4+")
        only = self.coordinator_keys[0]
        if self.key not in ("", only):
            raise FieldVersionError(
                f"FindCoordinatorRequest names two keys ({self.key!r} and {only!r});"
                f" version {version} carries one")
        return attrs.evolve(self, key=only, coordinator_keys=[])


@struct
class FindCoordinatorResponseCoordinator(Struct):
    key: str = f(STRING)
    node_id: int = f(INT32)
    host: str = f(STRING)
    port: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="4+", default="", ignorable=True)


@message(api_key=ApiKey.FIND_COORDINATOR, versions="0-6", flexible="3+")
class FindCoordinatorResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16, versions="0-3")
    error_message: str | None = f(
        STRING, versions="1-3", nullable="1-3", default="", ignorable=True)
    node_id: int = f(INT32, versions="0-3")
    host: str = f(STRING, versions="0-3")
    port: int = f(INT32, versions="0-3")
    coordinators: list[FindCoordinatorResponseCoordinator] = f(
        Array(FindCoordinatorResponseCoordinator), versions="4+")


pair(FindCoordinatorRequest, FindCoordinatorResponse)
