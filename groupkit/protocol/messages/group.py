"""Classic group membership: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14).

Facts that bite: from JoinGroup v4 a member joining with an empty id is answered
MEMBER_ID_REQUIRED together with the id it must rejoin with; from v5 static members carry
``group_instance_id``; LeaveGroup v3+ removes a batch of members instead of one ``member_id``.
"""

from __future__ import annotations

import attrs

from groupkit.errors import ApiKey, FieldVersionError
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

#: What ``group_instance_id`` asks of the broker (KIP-345); Java's JoinGroupRequest.Builder
#: refuses it below v5 in the same words.
_STATIC = "static membership (group_instance_id)"

# --- JoinGroup ---------------------------------------------------------------------------------


@struct
class JoinGroupRequestProtocol(Struct):
    name: str = f(STRING)
    metadata: bytes = f(BYTES)


@message(api_key=ApiKey.JOIN_GROUP, versions="0-9", flexible="6+")
class JoinGroupRequest(Request):
    group_id: str = f(STRING)
    session_timeout_ms: int = f(INT32)
    rebalance_timeout_ms: int = f(INT32, versions="1+", default=-1, ignorable=True)
    member_id: str = f(STRING)
    group_instance_id: str | None = f(STRING, versions="5+", nullable="5+", default=None,
                                      feature=_STATIC)
    protocol_type: str = f(STRING)
    protocols: list[JoinGroupRequestProtocol] = f(Array(JoinGroupRequestProtocol))
    reason: str | None = f(STRING, versions="8+", nullable="8+", default=None, ignorable=True)


@struct
class JoinGroupResponseMember(Struct):
    member_id: str = f(STRING)
    group_instance_id: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)
    metadata: bytes = f(BYTES)


@message(api_key=ApiKey.JOIN_GROUP, versions="0-9", flexible="6+")
class JoinGroupResponse(Response):
    throttle_time_ms: int = f(INT32, versions="2+", ignorable=True)
    error_code: int = f(INT16)
    generation_id: int = f(INT32, default=-1)
    protocol_type: str | None = f(
        STRING, versions="7+", nullable="7+", default=None, ignorable=True)
    protocol_name: str | None = f(STRING, nullable="7+", default="")
    leader: str = f(STRING)
    skip_assignment: bool = f(BOOL, versions="9+")
    member_id: str = f(STRING)
    members: list[JoinGroupResponseMember] = f(Array(JoinGroupResponseMember))


pair(JoinGroupRequest, JoinGroupResponse)

# --- SyncGroup ---------------------------------------------------------------------------------


@struct
class SyncGroupRequestAssignment(Struct):
    member_id: str = f(STRING)
    assignment: bytes = f(BYTES)


@message(api_key=ApiKey.SYNC_GROUP, versions="0-5", flexible="4+")
class SyncGroupRequest(Request):
    group_id: str = f(STRING)
    generation_id: int = f(INT32)
    member_id: str = f(STRING)
    group_instance_id: str | None = f(STRING, versions="3+", nullable="3+", default=None,
                                      feature=_STATIC)
    protocol_type: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)
    assignments: list[SyncGroupRequestAssignment] = f(Array(SyncGroupRequestAssignment))


@message(api_key=ApiKey.SYNC_GROUP, versions="0-5", flexible="4+")
class SyncGroupResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16)
    protocol_type: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = f(
        STRING, versions="5+", nullable="5+", default=None, ignorable=True)
    assignment: bytes = f(BYTES)


pair(SyncGroupRequest, SyncGroupResponse)

# --- Heartbeat ---------------------------------------------------------------------------------


@message(api_key=ApiKey.HEARTBEAT, versions="0-4", flexible="4+")
class HeartbeatRequest(Request):
    group_id: str = f(STRING)
    generation_id: int = f(INT32)
    member_id: str = f(STRING)
    group_instance_id: str | None = f(STRING, versions="3+", nullable="3+", default=None,
                                      feature=_STATIC)


@message(api_key=ApiKey.HEARTBEAT, versions="0-4", flexible="4+")
class HeartbeatResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16)


pair(HeartbeatRequest, HeartbeatResponse)

# --- LeaveGroup --------------------------------------------------------------------------------


@struct
class LeaveGroupRequestMember(Struct):
    member_id: str = f(STRING)
    group_instance_id: str | None = f(STRING, nullable="3+", default=None)
    reason: str | None = f(STRING, versions="5+", nullable="5+", default=None, ignorable=True)


@message(api_key=ApiKey.LEAVE_GROUP, versions="0-5", flexible="4+")
class LeaveGroupRequest(Request):
    """Set ``member_id``, ``members`` or both (naming the same member): like Kafka's request
    builder, encoding moves the one member into the shape the version carries (v0-2 carry only
    its member id, so its ``group_instance_id`` and ``reason`` are not sent)."""

    group_id: str = f(STRING)
    member_id: str = f(STRING, versions="0-2")
    members: list[LeaveGroupRequestMember] = f(Array(LeaveGroupRequestMember), versions="3+")

    def for_version(self, version: int) -> LeaveGroupRequest:
        if version >= 3:
            if not self.member_id:
                return self
            if not self.members:
                return attrs.evolve(self, member_id="",
                                    members=[LeaveGroupRequestMember(member_id=self.member_id)])
            if any(m.member_id == self.member_id for m in self.members):
                return attrs.evolve(self, member_id="")
            raise FieldVersionError(
                f"LeaveGroupRequest.member_id {self.member_id!r} is not among its members;"
                " name the leaving members in one place")
        if not self.members:
            return self
        if len(self.members) > 1:
            raise FieldVersionError(
                f"LeaveGroup v{version} removes one member, not {len(self.members)};"
                " send one request per member or use version 3+")
        only = self.members[0].member_id
        if self.member_id not in ("", only):
            raise FieldVersionError(
                f"LeaveGroupRequest names two members ({self.member_id!r} and {only!r});"
                f" version {version} carries one")
        return attrs.evolve(self, member_id=only, members=[])


@struct
class LeaveGroupResponseMember(Struct):
    member_id: str = f(STRING)
    group_instance_id: str | None = f(STRING, nullable="3+", default="")
    error_code: int = f(INT16)


@message(api_key=ApiKey.LEAVE_GROUP, versions="0-5", flexible="4+")
class LeaveGroupResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16)
    members: list[LeaveGroupResponseMember] = f(Array(LeaveGroupResponseMember), versions="3+")


pair(LeaveGroupRequest, LeaveGroupResponse)
