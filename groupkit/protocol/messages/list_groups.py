"""ListGroups (key 16): the groups a broker coordinates, optionally filtered by state and type."""

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


@message(api_key=ApiKey.LIST_GROUPS, versions="0-5", flexible="3+")
class ListGroupsRequest(Request):
    states_filter: list[str] = f(Array(STRING), versions="4+",
                                 feature="listing groups by state (states_filter)")
    types_filter: list[str] = f(Array(STRING), versions="5+",
                                feature="listing groups by type (types_filter)")


@struct
class ListGroupsResponseGroup(Struct):
    group_id: str = f(STRING)
    protocol_type: str = f(STRING)
    group_state: str = f(STRING, versions="4+", ignorable=True)
    group_type: str = f(STRING, versions="5+", ignorable=True)


@message(api_key=ApiKey.LIST_GROUPS, versions="0-5", flexible="3+")
class ListGroupsResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16)
    groups: list[ListGroupsResponseGroup] = f(Array(ListGroupsResponseGroup))


pair(ListGroupsRequest, ListGroupsResponse)
