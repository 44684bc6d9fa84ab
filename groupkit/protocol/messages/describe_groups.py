"""DescribeGroups (key 15): state, protocol and members of classic groups."""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    BOOL,
    BYTES,
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

#: Kafka's "not provided" value for ``authorized_operations``.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@message(api_key=ApiKey.DESCRIBE_GROUPS, versions="0-5", flexible="5+")
class DescribeGroupsRequest(Request):
    groups: list[str] = f(Array(STRING))
    include_authorized_operations: bool = f(
        BOOL, versions="3+", feature="authorized operations (include_authorized_operations)")


@struct
class DescribeGroupsResponseMember(Struct):
    member_id: str = f(STRING)
    group_instance_id: str | None = f(
        STRING, versions="4+", nullable="4+", default=None, ignorable=True)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    member_metadata: bytes = f(BYTES)
    member_assignment: bytes = f(BYTES)


@struct
class DescribeGroupsResponseGroup(Struct):
    error_code: int = f(INT16)
    group_id: str = f(STRING)
    group_state: str = f(STRING)
    protocol_type: str = f(STRING)
    protocol_data: str = f(STRING)
    members: list[DescribeGroupsResponseMember] = f(Array(DescribeGroupsResponseMember))
    authorized_operations: int = f(INT32, versions="3+", default=AUTHORIZED_OPERATIONS_OMITTED)


@message(api_key=ApiKey.DESCRIBE_GROUPS, versions="0-5", flexible="5+")
class DescribeGroupsResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    groups: list[DescribeGroupsResponseGroup] = f(Array(DescribeGroupsResponseGroup))


pair(DescribeGroupsRequest, DescribeGroupsResponse)
