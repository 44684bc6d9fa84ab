"""Sans-IO group membership: the state machine that joins, syncs, heartbeats and leaves."""

from groupkit.group.config import GroupConfig
from groupkit.group.error_actions import Action, Api, action_for
from groupkit.group.machine import GroupMachine
from groupkit.group.outputs import (
    Assigned,
    CommitFence,
    Coordinator,
    CoordinatorChanged,
    CoordinatorLost,
    Destination,
    Fatal,
    Left,
    Lost,
    Output,
    RequestDecision,
    Revoked,
    Send,
)
from groupkit.group.protocol import GroupMember, GroupProtocol
from groupkit.group.states import MemberState, Trigger

__all__ = [
    "Action",
    "Api",
    "Assigned",
    "CommitFence",
    "Coordinator",
    "CoordinatorChanged",
    "CoordinatorLost",
    "Destination",
    "Fatal",
    "GroupConfig",
    "GroupMachine",
    "GroupMember",
    "GroupProtocol",
    "Left",
    "Lost",
    "MemberState",
    "Output",
    "RequestDecision",
    "Revoked",
    "Send",
    "Trigger",
    "action_for",
]
