"""The requests the membership machine sends, built from its settings and what it knows.

Pure functions: the machine decides when to send and tracks the answer by ``RequestKind``;
this module only says what each request carries, and checks a leader's assignment before it
goes into SyncGroup.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from groupkit.errors import ErrorCode, InvalidAssignmentError
from groupkit.group.config import GroupConfig
from groupkit.group.protocol import GroupMember
from groupkit.protocol.messages.find_coordinator import (
    KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupRequestMember,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Response

#: Added to the rebalance timeout for JoinGroup/SyncGroup, as the Java client does, so the
#: coordinator's own timeout fires first.
JOIN_TIMEOUT_LAPSE_MS = 5_000


class RequestKind(enum.Enum):
    """The requests the machine sends; each value is the API's name."""

    # Identity hashing, as MemberState's: every answer looks its kind up in RESPONSE_TYPES.
    __hash__ = object.__hash__

    FIND = "FindCoordinator"
    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE = "LeaveGroup"


#: The response type each kind of request is answered with.
RESPONSE_TYPES: dict[RequestKind, type[Response]] = {
    RequestKind.FIND: FindCoordinatorResponse,
    RequestKind.JOIN: JoinGroupResponse,
    RequestKind.SYNC: SyncGroupResponse,
    RequestKind.HEARTBEAT: HeartbeatResponse,
    RequestKind.LEAVE: LeaveGroupResponse,
}


def join_timeout_ms(config: GroupConfig) -> int:
    """How long a JoinGroup or SyncGroup may stay unanswered before the member gives up."""
    return config.rebalance_timeout_ms + JOIN_TIMEOUT_LAPSE_MS


def find_coordinator(config: GroupConfig) -> FindCoordinatorRequest:
    """Ask any broker which one coordinates the group (v4+ carries the key in a list)."""
    return FindCoordinatorRequest(key=config.group_id, key_type=KEY_TYPE_GROUP,
                                  coordinator_keys=[config.group_id])


def coordinator_answer(resp: FindCoordinatorResponse,
                       group_id: str) -> tuple[int, str | None, tuple[int, str, int]]:
    """A FindCoordinator answer for ``group_id``: (error code, error message, (node id, host,
    port)). v4+ answers carry a list of keys; an answer without this group's entry, or one
    without an address, is COORDINATOR_NOT_AVAILABLE (not usable yet)."""
    code, node_id, host, port = resp.error_code, resp.node_id, resp.host, resp.port
    message = resp.error_message
    if resp.coordinators:
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        for entry in resp.coordinators:
            if entry.key == group_id:
                code, node_id, host, port, message = (
                    entry.error_code, entry.node_id, entry.host, entry.port, entry.error_message)
    if not code and not host:
        code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    return code, message or None, (node_id, host, port)


def join_group(config: GroupConfig, protocol_type: str, member_id: str,
               protocols: Sequence[tuple[str, bytes]], reason: str) -> JoinGroupRequest:
    """Join (or rejoin) with the protocols this member offers, preferred first."""
    return JoinGroupRequest(
        group_id=config.group_id, session_timeout_ms=config.session_timeout_ms,
        rebalance_timeout_ms=config.rebalance_timeout_ms, member_id=member_id,
        group_instance_id=config.group_instance_id, protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=name, metadata=metadata)
                   for name, metadata in protocols],
        reason=reason or None)


def sync_group(config: GroupConfig, generation_id: int, member_id: str, protocol_type: str,
               protocol_name: str | None,
               assignments: list[SyncGroupRequestAssignment]) -> SyncGroupRequest:
    """Complete the join; a leader carries every member's assignment, a follower none."""
    return SyncGroupRequest(
        group_id=config.group_id, generation_id=generation_id, member_id=member_id,
        group_instance_id=config.group_instance_id, protocol_type=protocol_type,
        protocol_name=protocol_name, assignments=assignments)


def heartbeat(config: GroupConfig, generation_id: int, member_id: str) -> HeartbeatRequest:
    """Tell the coordinator this member of ``generation_id`` is alive."""
    return HeartbeatRequest(group_id=config.group_id, generation_id=generation_id,
                            member_id=member_id, group_instance_id=config.group_instance_id)


def leave_group(config: GroupConfig, member_id: str, reason: str) -> LeaveGroupRequest:
    """Leave the group (v3+ names the member in a list, with the reason)."""
    return LeaveGroupRequest(
        group_id=config.group_id, member_id=member_id,
        members=[LeaveGroupRequestMember(member_id=member_id,
                                         group_instance_id=config.group_instance_id,
                                         reason=reason)])


def leader_assignments(members: Sequence[GroupMember],
                       result: Mapping[str, bytes]) -> list[SyncGroupRequestAssignment]:
    """The leader's assignments in member order, or InvalidAssignmentError naming the fault."""
    ids = [m.member_id for m in members]
    strangers = sorted(set(result) - set(ids))
    if strangers:
        raise InvalidAssignmentError(
            f"the assignor assigned to {strangers}, which are not members of this generation")
    missing = [i for i in ids if i not in result]
    if missing:
        raise InvalidAssignmentError(f"the assignor gave no assignment to members {missing}")
    bad = [i for i in ids if not isinstance(result[i], bytes | bytearray) or not result[i]]
    if bad:
        raise InvalidAssignmentError(
            f"the assignor gave members {bad} empty or non-bytes assignments; every member needs"
            " real assignment bytes (an empty one makes Java members fail)")
    return [SyncGroupRequestAssignment(member_id=i, assignment=bytes(result[i])) for i in ids]
