"""OffsetDelete (key 47): remove a group's committed offsets for some partitions.

Only v0 exists in released Kafka (2.4+, KIP-496) and it is not flexible. The coordinator refuses
partitions of topics the group is still subscribed to (GROUP_SUBSCRIBED_TO_TOPIC, per
partition); group-wide problems come back in the top-level error code.
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
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


@struct
class OffsetDeleteRequestPartition(Struct):
    partition_index: int = f(INT32)


@struct
class OffsetDeleteRequestTopic(Struct):
    name: str = f(STRING)
    partitions: list[OffsetDeleteRequestPartition] = f(Array(OffsetDeleteRequestPartition))


@message(api_key=ApiKey.OFFSET_DELETE, versions="0", flexible=None)
class OffsetDeleteRequest(Request):
    group_id: str = f(STRING)
    topics: list[OffsetDeleteRequestTopic] = f(Array(OffsetDeleteRequestTopic))


@struct
class OffsetDeleteResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)


@struct
class OffsetDeleteResponseTopic(Struct):
    name: str = f(STRING)
    partitions: list[OffsetDeleteResponsePartition] = f(Array(OffsetDeleteResponsePartition))


@message(api_key=ApiKey.OFFSET_DELETE, versions="0", flexible=None)
class OffsetDeleteResponse(Response):
    error_code: int = f(INT16)
    throttle_time_ms: int = f(INT32, ignorable=True)
    topics: list[OffsetDeleteResponseTopic] = f(Array(OffsetDeleteResponseTopic))


pair(OffsetDeleteRequest, OffsetDeleteResponse)
