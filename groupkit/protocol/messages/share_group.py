"""Share group membership (KIP-932): ShareGroupHeartbeat (76), ShareGroupDescribe (77).

Facts that bite: both are flexible from v0. Version 0 was Kafka 4.0's early access and Kafka
4.1 removed it; v1 (Kafka 4.1 and 4.2) has the same fields, so one class serves both, and the
client asks for v1 (the ShareConsumer refuses a broker that has only v0). The member id is made
by the client (a random uuid) and kept for the member's life; epoch 0 joins, -1 leaves. A
heartbeat's rack and topic names are null when they did not change since the last one. The
assignment travels by topic id and is a nullable struct (null: unchanged). A share group's
coordinator is found with FindCoordinator key type 0 (group), as for consumer groups.
"""

from __future__ import annotations

import uuid

import attrs

from groupkit.errors import ApiKey
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    STRING,
    UUID,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
)

#: The member epoch that joins a share group (a new member, or one fenced out of it).
JOIN_SHARE_GROUP_EPOCH = 0
#: The member epoch that leaves a share group.
LEAVE_SHARE_GROUP_EPOCH = -1

# --- ShareGroupHeartbeat -----------------------------------------------------------------------


@message(api_key=ApiKey.SHARE_GROUP_HEARTBEAT, versions="0-1", flexible="0+")
class ShareGroupHeartbeatRequest(Request):
    group_id: str = f(STRING)
    member_id: str = f(STRING)
    member_epoch: int = f(INT32)
    rack_id: str | None = f(STRING, nullable="0+", default=None)
    subscribed_topic_names: list[str] | None = f(Array(STRING), nullable="0+", default=None)


@struct
class ShareGroupHeartbeatTopicPartitions(Struct):
    """One topic's assigned partitions, named by topic id."""

    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[int] = f(Array(INT32))


@struct
class ShareGroupHeartbeatAssignment(Struct):
    topic_partitions: list[ShareGroupHeartbeatTopicPartitions] = f(
        Array(ShareGroupHeartbeatTopicPartitions))


@message(api_key=ApiKey.SHARE_GROUP_HEARTBEAT, versions="0-1", flexible="0+")
class ShareGroupHeartbeatResponse(Response):
    throttle_time_ms: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    member_id: str | None = f(STRING, nullable="0+", default=None)
    member_epoch: int = f(INT32)
    heartbeat_interval_ms: int = f(INT32)
    assignment: ShareGroupHeartbeatAssignment | None = f(
        ShareGroupHeartbeatAssignment, nullable="0+", default=None)


pair(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)

# --- ShareGroupDescribe ------------------------------------------------------------------------


@message(api_key=ApiKey.SHARE_GROUP_DESCRIBE, versions="0-1", flexible="0+")
class ShareGroupDescribeRequest(Request):
    group_ids: list[str] = f(Array(STRING))
    include_authorized_operations: bool = f(BOOL, default=False)


@struct
class ShareGroupDescribeTopicPartitions(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    topic_name: str = f(STRING)
    partitions: list[int] = f(Array(INT32))


@struct
class ShareGroupDescribeAssignment(Struct):
    topic_partitions: list[ShareGroupDescribeTopicPartitions] = f(
        Array(ShareGroupDescribeTopicPartitions))


@struct
class ShareGroupDescribeMember(Struct):
    member_id: str = f(STRING)
    rack_id: str | None = f(STRING, nullable="0+", default=None)
    member_epoch: int = f(INT32)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    subscribed_topic_names: list[str] = f(Array(STRING))
    assignment: ShareGroupDescribeAssignment = f(
        ShareGroupDescribeAssignment, default=attrs.Factory(ShareGroupDescribeAssignment))


#: ``authorized_operations`` when they were not asked for (Kafka's INT32_MIN).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


@struct
class ShareGroupDescribeGroup(Struct):
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    group_id: str = f(STRING)
    group_state: str = f(STRING)
    group_epoch: int = f(INT32)
    assignment_epoch: int = f(INT32)
    assignor_name: str = f(STRING)
    members: list[ShareGroupDescribeMember] = f(Array(ShareGroupDescribeMember))
    authorized_operations: int = f(INT32, default=AUTHORIZED_OPERATIONS_OMITTED)


@message(api_key=ApiKey.SHARE_GROUP_DESCRIBE, versions="0-1", flexible="0+")
class ShareGroupDescribeResponse(Response):
    throttle_time_ms: int = f(INT32)
    groups: list[ShareGroupDescribeGroup] = f(Array(ShareGroupDescribeGroup))


pair(ShareGroupDescribeRequest, ShareGroupDescribeResponse)
