"""OffsetCommit (key 8): store a group's consumed positions with its coordinator.

v1 adds group membership and a per-partition commit timestamp (v1 only); v2-v4 carry a
group-wide retention time instead; v6 adds the committed leader epoch; v7 the static member id;
v8 is the first flexible version; v9 (KIP-848) is v8 on the wire, for the new group protocol.
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
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
)


@struct
class OffsetCommitRequestPartition(Struct):
    partition_index: int = f(INT32)
    committed_offset: int = f(INT64)
    committed_leader_epoch: int = f(INT32, versions="6+", default=-1, ignorable=True)
    commit_timestamp: int = f(INT64, versions="1", default=-1)
    committed_metadata: str | None = f(STRING, nullable="0+", default="")


@struct
class OffsetCommitRequestTopic(Struct):
    name: str = f(STRING)
    partitions: list[OffsetCommitRequestPartition] = f(Array(OffsetCommitRequestPartition))


@message(api_key=ApiKey.OFFSET_COMMIT, versions="0-9", flexible="8+")
class OffsetCommitRequest(Request):
    group_id: str = f(STRING)
    generation_id_or_member_epoch: int = f(INT32, versions="1+", default=-1, ignorable=True)
    member_id: str = f(STRING, versions="1+", ignorable=True)
    group_instance_id: str | None = f(STRING, versions="7+", nullable="7+", default=None,
                                      feature="static membership (group_instance_id)")
    retention_time_ms: int = f(INT64, versions="2-4", default=-1, ignorable=True)
    topics: list[OffsetCommitRequestTopic] = f(Array(OffsetCommitRequestTopic))


@struct
class OffsetCommitResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)


@struct
class OffsetCommitResponseTopic(Struct):
    name: str = f(STRING)
    partitions: list[OffsetCommitResponsePartition] = f(Array(OffsetCommitResponsePartition))


@message(api_key=ApiKey.OFFSET_COMMIT, versions="0-9", flexible="8+")
class OffsetCommitResponse(Response):
    throttle_time_ms: int = f(INT32, versions="3+", ignorable=True)
    topics: list[OffsetCommitResponseTopic] = f(Array(OffsetCommitResponseTopic))


pair(OffsetCommitRequest, OffsetCommitResponse)
