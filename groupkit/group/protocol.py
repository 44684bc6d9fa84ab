"""What a group coordinates, as a plug-in: groupkit's membership works for any protocol type.

The consumer protocol (partitions) is one implementation; Kafka Connect style workers are
another. The membership machine never looks inside metadata or assignment bytes: it asks the
protocol for them and for the *units* (partitions, tasks...) an assignment holds, so it can tell
the runtime which units were added or revoked.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class GroupMember:
    """One member as the leader sees it in the JoinGroup answer."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@runtime_checkable
class GroupProtocol(Protocol):
    """The pluggable part of group membership."""

    @property
    def protocol_type(self) -> str:
        """The group's protocol type, e.g. "consumer" or "connect"; all members must agree."""
        ...

    def join_protocols(self, owned: frozenset[Hashable],
                       generation_id: int) -> Sequence[tuple[str, bytes]]:
        """The protocols this member supports, preferred first, each with its metadata bytes.

        Called for every JoinGroup with the units the member holds now and the generation it
        last joined (-1 if none), so the metadata can carry them.
        """
        ...

    def assign(self, protocol_name: str, members: Sequence[GroupMember]) -> Mapping[str, bytes]:
        """As leader: give every member its assignment bytes (never empty) under ``protocol_name``.

        The group machine checks the answer: one non-empty ``bytes`` per member, no strangers.
        """
        ...

    def on_assignment(self, protocol_name: str, assignment: bytes,
                      generation_id: int) -> frozenset[Hashable]:
        """Decode this member's assignment (of generation ``generation_id``) and return the
        units it holds.

        Raise a ``groupkit.errors.GroupkitError`` (e.g. ``CorruptFrame``) if it cannot be read.
        """
        ...

    def is_cooperative(self, protocol_name: str) -> bool:
        """Whether ``protocol_name`` rebalances incrementally (members keep units while rejoining).

        Eager protocols make a member give up everything before it sends JoinGroup.
        """
        ...
