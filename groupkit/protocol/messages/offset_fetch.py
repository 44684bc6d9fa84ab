"""OffsetFetch (key 9): read a group's committed positions from its coordinator.

v2 lets a null topic list mean "every topic" and adds a top-level error code; v5 adds the
committed leader epoch; v6 is the first flexible version; v7 adds require_stable; v8 replaces
the single group with a ``groups`` array (one request, many groups); v9 (KIP-848) adds the
member id and epoch of each group.
"""

from __future__ import annotations

import attrs

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
    too_old,
)

#: The first version that carries ``require_stable`` (KIP-447, Kafka 2.5).
_REQUIRE_STABLE = 7
#: The first version where a null topic list asks for every partition (Kafka 0.10.2).
_ALL_TOPICS = 2


@struct
class OffsetFetchRequestTopic(Struct):
    """A topic of the single-group form (v0-v7)."""

    name: str = f(STRING, versions="0-7")
    partition_indexes: list[int] = f(Array(INT32), versions="0-7")


@struct
class OffsetFetchRequestTopics(Struct):
    """A topic of one group in the multi-group form (v8+)."""

    name: str = f(STRING, versions="8+")
    partition_indexes: list[int] = f(Array(INT32), versions="8+")


@struct
class OffsetFetchRequestGroup(Struct):
    group_id: str = f(STRING, versions="8+")
    member_id: str | None = f(STRING, versions="9+", nullable="9+", default=None, ignorable=True)
    member_epoch: int = f(INT32, versions="9+", default=-1, ignorable=True)
    topics: list[OffsetFetchRequestTopics] | None = f(
        Array(OffsetFetchRequestTopics), versions="8+", nullable="8+", default=[])


@message(api_key=ApiKey.OFFSET_FETCH, versions="0-9", flexible="6+")
class OffsetFetchRequest(Request):
    group_id: str = f(STRING, versions="0-7")
    topics: list[OffsetFetchRequestTopic] | None = f(
        Array(OffsetFetchRequestTopic), versions="0-7", nullable="2-7", default=[])
    groups: list[OffsetFetchRequestGroup] = f(Array(OffsetFetchRequestGroup), versions="8+")
    require_stable: bool = f(BOOL, versions="7+", default=False)

    def for_version(self, version: int) -> OffsetFetchRequest:
        """Below v7 ``require_stable`` is dropped, as the Java consumer's
        OffsetFetchRequest.Builder drops it (throwOnFetchStableOffsetsUnsupported is false but
        for exactly-once processing, whose caller checks the version itself). Every partition
        of a group (a null topic list) needs v2, as the same builder says."""
        if version < _ALL_TOPICS and self.topics is None:
            raise too_old(type(self), version,
                          "a group's committed offsets of all its partitions (topics=None)",
                          _ALL_TOPICS)
        if version < _REQUIRE_STABLE and self.require_stable:
            return attrs.evolve(self, require_stable=False)
        return self


@struct
class OffsetFetchResponsePartition(Struct):
    """A partition of the single-group form (v0-v7)."""

    partition_index: int = f(INT32, versions="0-7")
    committed_offset: int = f(INT64, versions="0-7")
    committed_leader_epoch: int = f(INT32, versions="5-7", default=-1, ignorable=True)
    metadata: str | None = f(STRING, versions="0-7", nullable="0-7", default="")
    error_code: int = f(INT16, versions="0-7")


@struct
class OffsetFetchResponseTopic(Struct):
    """A topic of the single-group form (v0-v7)."""

    name: str = f(STRING, versions="0-7")
    partitions: list[OffsetFetchResponsePartition] = f(
        Array(OffsetFetchResponsePartition), versions="0-7")


@struct
class OffsetFetchResponsePartitions(Struct):
    """A partition of one group in the multi-group form (v8+)."""

    partition_index: int = f(INT32, versions="8+")
    committed_offset: int = f(INT64, versions="8+")
    committed_leader_epoch: int = f(INT32, versions="8+", default=-1, ignorable=True)
    metadata: str | None = f(STRING, versions="8+", nullable="8+", default="")
    error_code: int = f(INT16, versions="8+")


@struct
class OffsetFetchResponseTopics(Struct):
    """A topic of one group in the multi-group form (v8+)."""

    name: str = f(STRING, versions="8+")
    partitions: list[OffsetFetchResponsePartitions] = f(
        Array(OffsetFetchResponsePartitions), versions="8+")


@struct
class OffsetFetchResponseGroup(Struct):
    group_id: str = f(STRING, versions="8+")
    topics: list[OffsetFetchResponseTopics] = f(Array(OffsetFetchResponseTopics), versions="8+")
    error_code: int = f(INT16, versions="8+", default=0)


@message(api_key=ApiKey.OFFSET_FETCH, versions="0-9", flexible="6+")
class OffsetFetchResponse(Response):
    throttle_time_ms: int = f(INT32, versions="3+", ignorable=True)
    topics: list[OffsetFetchResponseTopic] = f(Array(OffsetFetchResponseTopic), versions="0-7")
    error_code: int = f(INT16, versions="2-7", default=0, ignorable=True)
    groups: list[OffsetFetchResponseGroup] = f(Array(OffsetFetchResponseGroup), versions="8+")


pair(OffsetFetchRequest, OffsetFetchResponse)
