"""The Kafka wire protocol, sans-IO: every API's request and response classes, by name.

Each class serves every version of its API: ``encode(version)`` writes the body and
``Response.decode(data, version)`` reads one. Headers, framing, records, compression and the
consumer embedded protocol live in their own modules beside this one. ``native_available``
says whether record batches are read by the C extension (see groupkit/protocol/native.py).

The names load on first use (PEP 562): importing any module of the protocol runs this one
first, and building every API's classes at that moment would make a Producer, which sends four
APIs, pay for all seventeen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupkit._lazy import lazy_exports

if TYPE_CHECKING:
    from groupkit.protocol.messages.api_versions import (
        ApiVersionsRequest as ApiVersionsRequest,
        ApiVersionsResponse as ApiVersionsResponse,
    )
    from groupkit.protocol.messages.create_topics import (
        CreateTopicsRequest as CreateTopicsRequest,
        CreateTopicsResponse as CreateTopicsResponse,
    )
    from groupkit.protocol.messages.delete_groups import (
        DeleteGroupsRequest as DeleteGroupsRequest,
        DeleteGroupsResponse as DeleteGroupsResponse,
    )
    from groupkit.protocol.messages.delete_topics import (
        DeleteTopicsRequest as DeleteTopicsRequest,
        DeleteTopicsResponse as DeleteTopicsResponse,
    )
    from groupkit.protocol.messages.describe_groups import (
        DescribeGroupsRequest as DescribeGroupsRequest,
        DescribeGroupsResponse as DescribeGroupsResponse,
    )
    from groupkit.protocol.messages.fetch import (
        FetchRequest as FetchRequest,
        FetchResponse as FetchResponse,
    )
    from groupkit.protocol.messages.find_coordinator import (
        FindCoordinatorRequest as FindCoordinatorRequest,
        FindCoordinatorResponse as FindCoordinatorResponse,
    )
    from groupkit.protocol.messages.group import (
        HeartbeatRequest as HeartbeatRequest,
        HeartbeatResponse as HeartbeatResponse,
        JoinGroupRequest as JoinGroupRequest,
        JoinGroupResponse as JoinGroupResponse,
        LeaveGroupRequest as LeaveGroupRequest,
        LeaveGroupResponse as LeaveGroupResponse,
        SyncGroupRequest as SyncGroupRequest,
        SyncGroupResponse as SyncGroupResponse,
    )
    from groupkit.protocol.messages.list_groups import (
        ListGroupsRequest as ListGroupsRequest,
        ListGroupsResponse as ListGroupsResponse,
    )
    from groupkit.protocol.messages.list_offsets import (
        ListOffsetsRequest as ListOffsetsRequest,
        ListOffsetsResponse as ListOffsetsResponse,
    )
    from groupkit.protocol.messages.metadata import (
        MetadataRequest as MetadataRequest,
        MetadataResponse as MetadataResponse,
    )
    from groupkit.protocol.messages.offset_commit import (
        OffsetCommitRequest as OffsetCommitRequest,
        OffsetCommitResponse as OffsetCommitResponse,
    )
    from groupkit.protocol.messages.offset_fetch import (
        OffsetFetchRequest as OffsetFetchRequest,
        OffsetFetchResponse as OffsetFetchResponse,
    )
    from groupkit.protocol.messages.produce import (
        ProduceRequest as ProduceRequest,
        ProduceResponse as ProduceResponse,
    )
    from groupkit.protocol.messages.sasl import (
        SaslAuthenticateRequest as SaslAuthenticateRequest,
        SaslAuthenticateResponse as SaslAuthenticateResponse,
        SaslHandshakeRequest as SaslHandshakeRequest,
        SaslHandshakeResponse as SaslHandshakeResponse,
    )
    from groupkit.protocol.native import available as native_available  # noqa: F401 (in __all__)
    from groupkit.protocol.registry import REQUESTS as REQUESTS

#: Home module -> the names it provides (the TYPE_CHECKING imports repeat them).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "groupkit.protocol.messages.api_versions": ("ApiVersionsRequest", "ApiVersionsResponse"),
    "groupkit.protocol.messages.create_topics": ("CreateTopicsRequest", "CreateTopicsResponse"),
    "groupkit.protocol.messages.delete_groups": ("DeleteGroupsRequest", "DeleteGroupsResponse"),
    "groupkit.protocol.messages.delete_topics": ("DeleteTopicsRequest", "DeleteTopicsResponse"),
    "groupkit.protocol.messages.describe_groups": (
        "DescribeGroupsRequest", "DescribeGroupsResponse",
    ),
    "groupkit.protocol.messages.fetch": ("FetchRequest", "FetchResponse"),
    "groupkit.protocol.messages.find_coordinator": (
        "FindCoordinatorRequest", "FindCoordinatorResponse",
    ),
    "groupkit.protocol.messages.group": (
        "HeartbeatRequest", "HeartbeatResponse", "JoinGroupRequest", "JoinGroupResponse",
        "LeaveGroupRequest", "LeaveGroupResponse", "SyncGroupRequest", "SyncGroupResponse",
    ),
    "groupkit.protocol.messages.list_groups": ("ListGroupsRequest", "ListGroupsResponse"),
    "groupkit.protocol.messages.list_offsets": ("ListOffsetsRequest", "ListOffsetsResponse"),
    "groupkit.protocol.messages.metadata": ("MetadataRequest", "MetadataResponse"),
    "groupkit.protocol.messages.offset_commit": ("OffsetCommitRequest", "OffsetCommitResponse"),
    "groupkit.protocol.messages.offset_fetch": ("OffsetFetchRequest", "OffsetFetchResponse"),
    "groupkit.protocol.messages.produce": ("ProduceRequest", "ProduceResponse"),
    "groupkit.protocol.messages.sasl": (
        "SaslAuthenticateRequest", "SaslAuthenticateResponse", "SaslHandshakeRequest",
        "SaslHandshakeResponse",
    ),
    "groupkit.protocol.registry": ("REQUESTS",),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted([*_HOMES, "native_available"])

_load, __dir__ = lazy_exports(globals(), _HOMES)


def __getattr__(name: str) -> Any:
    if name == "native_available":
        from groupkit.protocol.native import available

        globals()[name] = available
        return available
    return _load(name)
