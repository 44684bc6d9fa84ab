"""The consumer group protocol of KIP-848: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69).

Facts that bite: both are flexible from v0. A heartbeat's optional fields are null when they
did not change since the last heartbeat (the coordinator keeps what it was told), so a member
sends them all when it joins (epoch 0) and after any failed heartbeat, and only what changed
otherwise. Topics travel by id (uuid), never by name, in the assignment and the owned
partitions; ConsumerGroupDescribe gives both. The response's ``assignment`` is a nullable
struct (an int8 marker before it): null means "unchanged". v1 of the heartbeat adds
``subscribed_topic_regex`` (the broker resolves it, RE2/J syntax); v1 of the describe adds each
member's ``member_type`` (KIP-1099: 0 classic, 1 consumer, -1 unknown).
"""

from __future__ import annotations

import uuid

import attrs

from groupkit.errors import ApiKey
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import (
    BOOL,
    INT8,
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

#: The member epoch that joins the group (a new member, or one fenced out of it).
JOIN_GROUP_MEMBER_EPOCH = 0
#: The member epoch that leaves the group for good.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: The member epoch a static member leaves with when it will come back (its instance id is
#: kept for it, with its assignment, until the session timeout).
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# --- ConsumerGroupHeartbeat --------------------------------------------------------------------


@struct
class ConsumerGroupHeartbeatTopicPartitions(Struct):
    """One topic's partitions: owned (in a request) or assigned (in a response)."""

    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[int] = f(Array(INT32))


@message(api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT, versions="0-1", flexible="0+")
class ConsumerGroupHeartbeatRequest(Request):
    group_id: str = f(STRING)
    member_id: str = f(STRING)
    member_epoch: int = f(INT32)
    instance_id: str | None = f(STRING, nullable="0+", default=None)
    rack_id: str | None = f(STRING, nullable="0+", default=None)
    rebalance_timeout_ms: int = f(INT32, default=-1)
    subscribed_topic_names: list[str] | None = f(Array(STRING), nullable="0+", default=None)
    subscribed_topic_regex: str | None = f(STRING, versions="1+", nullable="1+", default=None)
    server_assignor: str | None = f(STRING, nullable="0+", default=None)
    topic_partitions: list[ConsumerGroupHeartbeatTopicPartitions] | None = f(
        Array(ConsumerGroupHeartbeatTopicPartitions), nullable="0+", default=None)

    def for_version(self, version: int) -> ConsumerGroupHeartbeatRequest:
        """v0 has no regex field: an empty one (no pattern) is dropped there, a real pattern
        still fails to encode (FieldVersionError), as it cannot be carried."""
        if version < 1 and self.subscribed_topic_regex == "":
            return attrs.evolve(self, subscribed_topic_regex=None)
        return self


@struct
class ConsumerGroupHeartbeatAssignment(Struct):
    topic_partitions: list[ConsumerGroupHeartbeatTopicPartitions] = f(
        Array(ConsumerGroupHeartbeatTopicPartitions))


@message(api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT, versions="0-1", flexible="0+")
class ConsumerGroupHeartbeatResponse(Response):
    throttle_time_ms: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    member_id: str | None = f(STRING, nullable="0+", default=None)
    member_epoch: int = f(INT32)
    heartbeat_interval_ms: int = f(INT32)
    assignment: ConsumerGroupHeartbeatAssignment | None = f(
        ConsumerGroupHeartbeatAssignment, nullable="0+", default=None)


pair(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)

# --- ConsumerGroupDescribe ---------------------------------------------------------------------


@message(api_key=ApiKey.CONSUMER_GROUP_DESCRIBE, versions="0-1", flexible="0+")
class ConsumerGroupDescribeRequest(Request):
    group_ids: list[str] = f(Array(STRING))
    include_authorized_operations: bool = f(BOOL, default=False)


@struct
class ConsumerGroupDescribeTopicPartitions(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    topic_name: str = f(STRING)
    partitions: list[int] = f(Array(INT32))


@struct
class ConsumerGroupDescribeAssignment(Struct):
    topic_partitions: list[ConsumerGroupDescribeTopicPartitions] = f(
        Array(ConsumerGroupDescribeTopicPartitions))


@struct
class ConsumerGroupDescribeMember(Struct):
    member_id: str = f(STRING)
    instance_id: str | None = f(STRING, nullable="0+", default=None)
    rack_id: str | None = f(STRING, nullable="0+", default=None)
    member_epoch: int = f(INT32)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    subscribed_topic_names: list[str] = f(Array(STRING))
    subscribed_topic_regex: str | None = f(STRING, nullable="0+", default=None)
    assignment: ConsumerGroupDescribeAssignment = f(
        ConsumerGroupDescribeAssignment, default=attrs.Factory(ConsumerGroupDescribeAssignment))
    target_assignment: ConsumerGroupDescribeAssignment = f(
        ConsumerGroupDescribeAssignment, default=attrs.Factory(ConsumerGroupDescribeAssignment))
    #: KIP-1099: -1 unknown, 0 a classic-protocol member, 1 a consumer-protocol member.
    member_type: int = f(INT8, versions="1+", default=-1, ignorable=True)


#: ``authorized_operations`` when they were not asked for (Kafka's INT32_MIN).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


@struct
class ConsumerGroupDescribeGroup(Struct):
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    group_id: str = f(STRING)
    group_state: str = f(STRING)
    group_epoch: int = f(INT32)
    assignment_epoch: int = f(INT32)
    assignor_name: str = f(STRING)
    members: list[ConsumerGroupDescribeMember] = f(Array(ConsumerGroupDescribeMember))
    authorized_operations: int = f(INT32, default=AUTHORIZED_OPERATIONS_OMITTED)


@message(api_key=ApiKey.CONSUMER_GROUP_DESCRIBE, versions="0-1", flexible="0+")
class ConsumerGroupDescribeResponse(Response):
    throttle_time_ms: int = f(INT32)
    groups: list[ConsumerGroupDescribeGroup] = f(Array(ConsumerGroupDescribeGroup))


pair(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)
