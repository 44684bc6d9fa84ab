"""DeleteGroups (key 42): delete empty classic groups and their committed offsets."""

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


@message(api_key=ApiKey.DELETE_GROUPS, versions="0-2", flexible="2+")
class DeleteGroupsRequest(Request):
    groups_names: list[str] = f(Array(STRING))


@struct
class DeleteGroupsResponseResult(Struct):
    group_id: str = f(STRING)
    error_code: int = f(INT16)


@message(api_key=ApiKey.DELETE_GROUPS, versions="0-2", flexible="2+")
class DeleteGroupsResponse(Response):
    throttle_time_ms: int = f(INT32)
    results: list[DeleteGroupsResponseResult] = f(Array(DeleteGroupsResponseResult))


pair(DeleteGroupsRequest, DeleteGroupsResponse)
