"""The assignor interface, and the member order every built-in assignor shares with Java."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping

from assignors._types import (
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
)


class Assignor(abc.ABC):
    """A partition assignment strategy: JoinGroup metadata out, assignment in when leader.

    Instances may hold state between rebalances (the sticky assignor remembers its last
    assignment), so every consumer uses its own instance.
    """

    name: str = ""
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def metadata(
        self,
        topics: Iterable[str],
        owned_partitions: Iterable[TopicPartition] = (),
        generation: int = -1,
        rack: str | None = None,
    ) -> bytes:
        """The consumer Subscription bytes this member sends in JoinGroup."""
        # Imported here: groupkit re-exports TopicPartition from this package, so the wire
        # module (which imports groupkit.protocol) must not load while groupkit is starting.
        from assignors.wire import encode_subscription

        owned = tuple(owned_partitions)
        return encode_subscription(
            topics, owned, generation, rack, self.subscription_user_data(owned, generation)
        )

    def subscription_user_data(
        self, owned_partitions: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        """User data to put in the Subscription; none by default."""
        return None

    @abc.abstractmethod
    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        """Give every member an assignment (possibly empty) for the subscribed partitions."""

    def on_assignment(  # noqa: B027 (an optional hook: most assignors keep no state)
        self, assignment: MemberAssignment, generation: int
    ) -> None:
        """Called on every member when SyncGroup delivers its assignment; stateless by default."""


def member_order(members: Mapping[str, MemberSubscription]) -> list[str]:
    """Member ids in the Java client's order: static members by instance id, then dynamic by id."""
    static = sorted(
        (sub.group_instance_id, member_id)
        for member_id, sub in members.items()
        if sub.group_instance_id is not None
    )
    dynamic = sorted(
        member_id for member_id, sub in members.items() if sub.group_instance_id is None
    )
    return [member_id for _, member_id in static] + dynamic
