"""The Kafka wire protocol, sans-IO: every API's request and response classes, by name.

Each class serves every version of its API: ``encode(version)`` writes the body and
``Response.decode(data, version)`` reads one. Headers, framing, records, compression and the
consumer embedded protocol live in their own modules beside this one. ``native_available``
says whether record batches are read by the C extension (see groupkit/protocol/native.py).
"""

from __future__ import annotations

from groupkit.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupkit.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from groupkit.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupkit.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from groupkit.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupkit.protocol.messages.fetch import FetchRequest, FetchResponse
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupkit.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupkit.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupkit.protocol.messages.produce import ProduceRequest, ProduceResponse
from groupkit.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupkit.protocol.native import available as native_available
from groupkit.protocol.registry import REQUESTS

__all__ = [
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "ProduceRequest",
    "ProduceResponse",
    "REQUESTS",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "native_available",
]
