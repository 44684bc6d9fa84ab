"""Sans-IO group membership: the state machine that joins, syncs, heartbeats and leaves.

The names below load on first use (PEP 562), as ``groupkit``'s own do, so a module that needs
one piece (the runtime's connections and the settings take only ``groupkit.group.backoff``)
does not load the machine, its tables and the assignors' wire format with it: a Producer uses
none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupkit._lazy import lazy_exports

if TYPE_CHECKING:
    from groupkit.group.config import GroupConfig as GroupConfig
    from groupkit.group.error_actions import (
        Action as Action,
        Api as Api,
        action_for as action_for,
    )
    from groupkit.group.machine import GroupMachine as GroupMachine
    from groupkit.group.member_machine import MemberMachine as MemberMachine
    from groupkit.group.outputs import (
        Assigned as Assigned,
        CommitFence as CommitFence,
        Coordinator as Coordinator,
        CoordinatorChanged as CoordinatorChanged,
        CoordinatorLost as CoordinatorLost,
        Destination as Destination,
        Fatal as Fatal,
        GenerationJoined as GenerationJoined,
        Leaving as Leaving,
        Left as Left,
        Lost as Lost,
        Output as Output,
        Rebalancing as Rebalancing,
        RequestDecision as RequestDecision,
        Revoked as Revoked,
        Send as Send,
    )
    from groupkit.group.protocol import GroupMember as GroupMember, GroupProtocol as GroupProtocol
    from groupkit.group.states import MemberState as MemberState, Trigger as Trigger

#: Home module -> the names it provides (the TYPE_CHECKING imports repeat them).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "groupkit.group.config": ("GroupConfig",),
    "groupkit.group.error_actions": ("Action", "Api", "action_for"),
    "groupkit.group.machine": ("GroupMachine",),
    "groupkit.group.member_machine": ("MemberMachine",),
    "groupkit.group.outputs": (
        "Assigned", "CommitFence", "Coordinator", "CoordinatorChanged", "CoordinatorLost",
        "Destination", "Fatal", "GenerationJoined", "Leaving", "Left", "Lost", "Output",
        "Rebalancing", "RequestDecision", "Revoked", "Send",
    ),
    "groupkit.group.protocol": ("GroupMember", "GroupProtocol"),
    "groupkit.group.states": ("MemberState", "Trigger"),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(globals(), _HOMES)
