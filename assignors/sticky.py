"""The sticky and cooperative-sticky assignors (KIP-54, KIP-341, KIP-429), wire-compatible with Java."""

from __future__ import annotations

import struct
from collections.abc import Mapping

from assignors import sticky_loops
from assignors._types import (
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
)
from assignors.balance import general_assignment
from assignors.base import Assignor, member_order
from assignors.layout import PartitionLayout
from assignors.sticky_data import encode_sticky_user_data, layouts
from assignors.sticky_loops import NumberingLike

#: A member's previous partitions as numbers, the generation they date from, and the
#: TopicPartitions they were read from when those were the subscription's owned partitions.
Claims = tuple[list[int], int, "tuple[TopicPartition, ...] | None"]


class _StickyBase(Assignor):
    """What sticky and cooperative-sticky share: where a member's previous assignment is read."""

    def claims(self, subscription: MemberSubscription, numbering: NumberingLike) -> Claims:
        """The partitions a member owned before this rebalance and their generation."""
        owned = subscription.owned_partitions
        return numbering.owned(owned), subscription.generation, owned


class _Plan:
    """Numbered members, partitions, claims and the balanced result of one assignment.

    The cost follows what changes: the per-partition work (reading claims, resolving owners,
    the uniform fill, writing TopicPartitions) runs in ``sticky_loops.active``, and a member
    that keeps exactly the owned partitions it sent gets that same tuple back.
    """

    def __init__(
        self, assignor: _StickyBase, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> None:
        loops = sticky_loops.active
        self.order = member_order(members)
        subscriptions = [members[m] for m in self.order]
        # Members of one subscription (the usual case) share one set of its topics.
        distinct: dict[tuple[str, ...], frozenset[str]] = {}
        self.topics: list[frozenset[str]] = []
        for sub in subscriptions:
            topics = distinct.get(sub.topics)
            if topics is None:
                topics = distinct[sub.topics] = frozenset(sub.topics)
            self.topics.append(topics)
        everything = frozenset().union(*distinct.values())
        self.layout = layout = PartitionLayout({t: cluster.count(t) for t in everything})
        self.numbering = loops.numbering(
            layout.topics, [layout.counts[t] for t in layout.topics], TopicPartition
        )
        claims: list[list[int]] = []
        generations: list[int] = []
        self.sources: list[tuple[TopicPartition, ...] | None] = []
        for sub in subscriptions:
            claimed, generation, source = assignor.claims(sub, self.numbering)
            claims.append(claimed)
            generations.append(generation)
            self.sources.append(source if source is not None and len(source) == len(claimed) else None)
        self.claims = claims
        #: Each partition's previous owner (member number, -1: none), and what each member owns.
        self.owner, self.owned = loops.resolve(claims, generations, layout.total)
        self.assigned: list[list[int]]
        if not subscriptions or not layout.total:
            self.assigned = [[] for _ in subscriptions]
        elif all(topics.issuperset(layout.topics) for topics in distinct.values()):
            # Every member may take every partition (topics absent from the cluster aside).
            self.assigned = loops.fill_uniform(self.owned, layout.total)
        else:
            self.assigned = general_assignment(layout, self.topics, self.owner, loops)

    def result(self) -> dict[str, MemberAssignment]:
        """Each member's TopicPartitions: the ones it sent, where it keeps them all first (as a
        member of a uniform group does), then new ones for what it receives."""
        out = {}
        partitions = self.numbering.partitions
        for member, member_id in enumerate(self.order):
            assigned, source = self.assigned[member], self.sources[member]
            if source is None:
                out[member_id] = MemberAssignment(partitions(assigned))
            elif assigned is self.claims[member]:
                out[member_id] = MemberAssignment(source)
            else:
                kept = len(source)
                if assigned[:kept] == self.claims[member]:
                    out[member_id] = MemberAssignment(source + partitions(assigned[kept:]))
                else:
                    out[member_id] = MemberAssignment(partitions(assigned))
        return out


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

    def claims(self, subscription: MemberSubscription, numbering: NumberingLike) -> Claims:
        data = subscription.user_data
        if data:
            for start, with_generation in layouts(data):
                read = numbering.sticky(data, start, with_generation)
                if read is not None:
                    claimed, generation = read
                    return claimed, generation if generation >= 0 else subscription.generation, None
        # No user data, or none that decodes: the member's previous assignment is ignored,
        # and its owned partitions (Subscription v1+) count instead.
        return super().claims(subscription, numbering)

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

    def claims(self, subscription: MemberSubscription, numbering: NumberingLike) -> Claims:
        claimed, generation, source = super().claims(subscription, numbering)
        if generation < 0 and len(subscription.user_data) == 4:
            generation = struct.unpack(">i", subscription.user_data)[0]
        return claimed, generation, source

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        plan = _Plan(self, cluster, members)
        # Withhold every partition whose current owner is another member, the owner being
        # the claim of the highest generation (Java: CooperativeStickyAssignor.adjustAssignment
        # over the owners AbstractStickyAssignor resolved). A stale claim (a member that missed
        # a rebalance, e.g. expelled while its JoinGroup was lost) does not make its partitions
        # free to hand straight back to it while the member of the newer generation holds them.
        # A member given exactly what it owns has nothing to withhold.
        owner = plan.owner
        if max(owner, default=-1) < 0:
            return plan.result()  # nobody owns anything yet
        for member, assigned in enumerate(plan.assigned):
            owned = plan.owned[member]
            if assigned is owned:
                continue
            # Only partitions a member did not own can be withheld: when it keeps everything it
            # owned first (a uniform group), only what follows needs looking at.
            kept = len(owned) if assigned[: len(owned)] == owned else 0
            plan.assigned[member] = assigned[:kept] + [
                index for index in assigned[kept:] if owner[index] < 0 or owner[index] == member
            ]
        return plan.result()
