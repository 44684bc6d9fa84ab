"""The sticky and cooperative-sticky assignors (KIP-54, KIP-341, KIP-429), wire-compatible with Java."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from operator import itemgetter

from assignors._types import (
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
)
from assignors.balance import balanced_assignment
from assignors.base import Assignor, member_order
from assignors.layout import PartitionLayout
from assignors.sticky_data import decode_sticky_user_data_by_topic, encode_sticky_user_data
from groupkit.errors import CorruptFrame

ByTopic = Iterable[tuple[str, Sequence[int]]]


def owned_by_topic(subscription: MemberSubscription) -> ByTopic:
    """A member's owned partitions as ``[(topic, partition ids)]`` runs."""
    return [
        (topic, [p for _, p in run])
        for topic, run in groupby(subscription.owned_partitions, key=itemgetter(0))
    ]


class _StickyBase(Assignor):
    """What sticky and cooperative-sticky share: where a member's previous assignment is read."""

    def previous_assignment(self, subscription: MemberSubscription) -> tuple[ByTopic, int]:
        """The partitions a member owned before this rebalance, grouped by topic, and the
        generation they date from."""
        return owned_by_topic(subscription), subscription.generation


class _Plan:
    """Numbered members, partitions, claims and the balanced result of one assignment."""

    def __init__(
        self, assignor: _StickyBase, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> None:
        self.order = member_order(members)
        subscriptions = [frozenset(members[m].topics) for m in self.order]
        topics = frozenset().union(*subscriptions)
        self.layout = PartitionLayout({t: cluster.count(t) for t in topics})
        self.claims: list[list[int]] = []
        #: Each partition's current owner (member number, -1: none) after resolving claims.
        self.owner = owner = [-1] * self.layout.total
        generations: list[int] = []
        # Higher generation wins a partition claimed twice; on a tie the earlier member keeps it.
        for member, member_id in enumerate(self.order):
            by_topic, generation = assignor.previous_assignment(members[member_id])
            generations.append(generation)
            claimed = self.layout.indices(by_topic)
            self.claims.append(claimed)
            for index in claimed:
                current = owner[index]
                if current < 0 or generation > generations[current]:
                    owner[index] = member
        self.assigned = balanced_assignment(self.layout, subscriptions, owner)

    def result(self) -> dict[str, MemberAssignment]:
        partitions = self.layout.partitions
        return {
            member_id: MemberAssignment(partitions(sorted(self.assigned[member])))
            for member, member_id in enumerate(self.order)
        }


class StickyAssignor(_StickyBase):
    """Balanced, then sticky; the previous assignment travels in StickyAssignorUserData.

    It remembers its own last assignment, because under EAGER the runtime revokes everything
    before JoinGroup and the owned partitions it passes to ``metadata`` are then empty.
    """

    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def __init__(self) -> None:
        self._assignment: tuple[TopicPartition, ...] | None = None
        self._generation = -1

    def subscription_user_data(
        self, owned_partitions: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        if self._assignment is not None:
            owned_partitions, generation = self._assignment, self._generation
        elif not owned_partitions and generation < 0:
            return None
        return encode_sticky_user_data(owned_partitions, generation)

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        self._assignment = assignment.partitions
        self._generation = generation

    def previous_assignment(self, subscription: MemberSubscription) -> tuple[ByTopic, int]:
        if subscription.user_data:
            try:
                by_topic, generation = decode_sticky_user_data_by_topic(subscription.user_data)
            except CorruptFrame:
                pass
            else:
                return by_topic, generation if generation >= 0 else subscription.generation
        return owned_by_topic(subscription), subscription.generation

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        return _Plan(self, cluster, members).result()


class CooperativeStickyAssignor(_StickyBase):
    """The sticky algorithm under COOPERATIVE: a partition changing owner is withheld one round.

    The owner sees it gone, revokes it and rejoins; the follow-up rebalance then hands it over.
    Owned partitions and generation come from Subscription v1+/v2+; like Java, the generation
    also travels as a 4-byte user data for leaders that read only older subscription versions.
    """

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def subscription_user_data(
        self, owned_partitions: tuple[TopicPartition, ...], generation: int
    ) -> bytes | None:
        return struct.pack(">i", generation)

    def previous_assignment(self, subscription: MemberSubscription) -> tuple[ByTopic, int]:
        generation = subscription.generation
        if generation < 0 and len(subscription.user_data) == 4:
            generation = struct.unpack(">i", subscription.user_data)[0]
        return owned_by_topic(subscription), generation

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        plan = _Plan(self, cluster, members)
        # Withhold every partition whose current owner is another member, the owner being
        # the claim of the highest generation (Java: CooperativeStickyAssignor.adjustAssignment
        # over the owners AbstractStickyAssignor resolved). A stale claim (a member that missed
        # a rebalance, e.g. expelled while its JoinGroup was lost) does not make its partitions
        # free to hand straight back to it while the member of the newer generation holds them.
        for member, assigned in enumerate(plan.assigned):
            plan.assigned[member] = [
                index for index in assigned if plan.owner[index] in (-1, member)
            ]
        return plan.result()
