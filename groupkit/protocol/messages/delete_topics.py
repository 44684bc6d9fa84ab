"""DeleteTopics (key 20): delete topics through the controller (tests and tools use it).

v0-v5 name topics in a plain string array; v6 replaces it with a ``topics`` array whose entries
carry a name or a topic id. v4 is the first flexible version; v5 adds a per-topic error message.
"""

from __future__ import annotations

import uuid

from groupkit.errors import ApiKey
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import (
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
class DeleteTopicsRequestTopic(Struct):
    name: str | None = f(STRING, versions="6+", nullable="6+", default=None)
    topic_id: uuid.UUID = f(UUID, versions="6+", default=NULL_UUID)


@message(api_key=ApiKey.DELETE_TOPICS, versions="0-6", flexible="4+")
class DeleteTopicsRequest(Request):
    topics: list[DeleteTopicsRequestTopic] = f(Array(DeleteTopicsRequestTopic), versions="6+")
    topic_names: list[str] = f(Array(STRING), versions="0-5", ignorable=True)
    timeout_ms: int = f(INT32)


@struct
class DeleteTopicsResponseTopic(Struct):
    name: str | None = f(STRING, nullable="6+", default="")
    topic_id: uuid.UUID = f(UUID, versions="6+", default=NULL_UUID, ignorable=True)
    error_code: int = f(INT16)
    error_message: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)


@message(api_key=ApiKey.DELETE_TOPICS, versions="0-6", flexible="4+")
class DeleteTopicsResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    responses: list[DeleteTopicsResponseTopic] = f(Array(DeleteTopicsResponseTopic))


pair(DeleteTopicsRequest, DeleteTopicsResponse)
