"""Metadata (key 3): brokers, topics, partitions and their leaders.

Version 1 makes a null topic list mean "all topics" (v0 used an empty list for that); v9 is the
first flexible version; v10 adds topic ids, and from v12 a topic may be named by id alone
(null name).
"""

from __future__ import annotations

import uuid

from groupkit.errors import ApiKey
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

#: Kafka's "not provided" value for the authorized-operations bit fields.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@struct
class MetadataRequestTopic(Struct):
    topic_id: uuid.UUID = f(UUID, versions="10+", ignorable=True)
    name: str | None = f(STRING, nullable="10+", default="")


@message(api_key=ApiKey.METADATA, versions="0-12", flexible="9+")
class MetadataRequest(Request):
    topics: list[MetadataRequestTopic] | None = f(
        Array(MetadataRequestTopic), nullable="1+", default=[])
    allow_auto_topic_creation: bool = f(
        BOOL, versions="4+", default=True,
        feature="metadata without topic auto-creation (allow_auto_topic_creation=False)")
    include_cluster_authorized_operations: bool = f(
        BOOL, versions="8-10", feature="authorized operations (include_cluster_authorized_operations)")
    include_topic_authorized_operations: bool = f(
        BOOL, versions="8+", feature="authorized operations (include_topic_authorized_operations)")


@struct
class MetadataResponseBroker(Struct):
    node_id: int = f(INT32)
    host: str = f(STRING)
    port: int = f(INT32)
    rack: str | None = f(STRING, versions="1+", nullable="1+", default=None, ignorable=True)


@struct
class MetadataResponsePartition(Struct):
    error_code: int = f(INT16)
    partition_index: int = f(INT32)
    leader_id: int = f(INT32)
    leader_epoch: int = f(INT32, versions="7+", default=-1, ignorable=True)
    replica_nodes: list[int] = f(Array(INT32))
    isr_nodes: list[int] = f(Array(INT32))
    offline_replicas: list[int] = f(Array(INT32), versions="5+", ignorable=True)


@struct
class MetadataResponseTopic(Struct):
    error_code: int = f(INT16)
    name: str | None = f(STRING, nullable="12+", default="")
    topic_id: uuid.UUID = f(UUID, versions="10+", ignorable=True)
    is_internal: bool = f(BOOL, versions="1+", ignorable=True)
    partitions: list[MetadataResponsePartition] = f(Array(MetadataResponsePartition))
    topic_authorized_operations: int = f(
        INT32, versions="8+", default=AUTHORIZED_OPERATIONS_OMITTED)


@message(api_key=ApiKey.METADATA, versions="0-12", flexible="9+")
class MetadataResponse(Response):
    throttle_time_ms: int = f(INT32, versions="3+", ignorable=True)
    brokers: list[MetadataResponseBroker] = f(Array(MetadataResponseBroker))
    cluster_id: str | None = f(STRING, versions="2+", nullable="2+", default=None, ignorable=True)
    controller_id: int = f(INT32, versions="1+", default=-1, ignorable=True)
    topics: list[MetadataResponseTopic] = f(Array(MetadataResponseTopic))
    cluster_authorized_operations: int = f(
        INT32, versions="8-10", default=AUTHORIZED_OPERATIONS_OMITTED)


pair(MetadataRequest, MetadataResponse)
