"""CreateTopics (key 19): create topics through the controller (tests and tools use it).

v1 adds validate_only; v4 lets partitions and replication factor be -1 for broker defaults
(KIP-464); v5 is the first flexible version and returns each topic's partitions, replication
factor and configs (KIP-525); v6 may answer THROTTLING_QUOTA_EXCEEDED; v7 returns topic ids.
"""

from __future__ import annotations

import uuid

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


@struct
class CreateTopicsRequestAssignment(Struct):
    partition_index: int = f(INT32)
    broker_ids: list[int] = f(Array(INT32))


@struct
class CreateTopicsRequestConfig(Struct):
    name: str = f(STRING)
    value: str | None = f(STRING, nullable="0+", default="")


@struct
class CreateTopicsRequestTopic(Struct):
    name: str = f(STRING)
    num_partitions: int = f(INT32)
    replication_factor: int = f(INT16)
    assignments: list[CreateTopicsRequestAssignment] = f(Array(CreateTopicsRequestAssignment))
    configs: list[CreateTopicsRequestConfig] = f(Array(CreateTopicsRequestConfig))


@message(api_key=ApiKey.CREATE_TOPICS, versions="0-7", flexible="5+")
class CreateTopicsRequest(Request):
    topics: list[CreateTopicsRequestTopic] = f(Array(CreateTopicsRequestTopic))
    timeout_ms: int = f(INT32, default=60000)
    validate_only: bool = f(BOOL, versions="1+", default=False,
                            feature="validate-only topic creation (validate_only)")


@struct
class CreateTopicsResponseConfig(Struct):
    name: str = f(STRING, versions="5+")
    value: str | None = f(STRING, versions="5+", nullable="5+", default="")
    read_only: bool = f(BOOL, versions="5+")
    config_source: int = f(INT8, versions="5+", default=-1, ignorable=True)
    is_sensitive: bool = f(BOOL, versions="5+")


@struct
class CreateTopicsResponseTopic(Struct):
    name: str = f(STRING)
    topic_id: uuid.UUID = f(UUID, versions="7+", default=NULL_UUID, ignorable=True)
    error_code: int = f(INT16)
    error_message: str | None = f(
        STRING, versions="1+", nullable="0+", default="", ignorable=True)
    topic_config_error_code: int = f(INT16, versions="5+", tag=0, ignorable=True)
    num_partitions: int = f(INT32, versions="5+", default=-1, ignorable=True)
    replication_factor: int = f(INT16, versions="5+", default=-1, ignorable=True)
    configs: list[CreateTopicsResponseConfig] | None = f(
        Array(CreateTopicsResponseConfig), versions="5+", nullable="5+", default=[],
        ignorable=True)


@message(api_key=ApiKey.CREATE_TOPICS, versions="0-7", flexible="5+")
class CreateTopicsResponse(Response):
    throttle_time_ms: int = f(INT32, versions="2+", ignorable=True)
    topics: list[CreateTopicsResponseTopic] = f(Array(CreateTopicsResponseTopic))


pair(CreateTopicsRequest, CreateTopicsResponse)
