"""A capacity-weighted assignor: members get partitions in proportion to the capacity they send."""

from __future__ import annotations

import heapq
import struct
from collections.abc import Mapping

from assignors import (
    Assignor,
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    TopicPartition,
    member_order,
)
from groupkit.errors import ConfigError

__all__ = ["WeightedAssignor", "capacity_of"]


def capacity_of(subscription: MemberSubscription) -> int:
    """The capacity a member sent; 1 for members that sent none (e.g. other assignors' data)."""
    if len(subscription.user_data) == 4:
        return max(1, struct.unpack(">i", subscription.user_data)[0])
    return 1


class WeightedAssignor(Assignor):
    """Each partition goes to the subscribed member whose load per unit of capacity stays lowest."""

    name = "weighted"

    def __init__(self, capacity: int = 1) -> None:
        if capacity < 1:
            raise ConfigError(f"assignor capacity must be at least 1, got {capacity}")
        self.capacity = capacity

    def subscription_user_data(
        self, owned_partitions: tuple[TopicPartition, ...], generation: int
    ) -> bytes:
        return struct.pack(">i", self.capacity)

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        order = member_order(members)
        capacity = {m: capacity_of(members[m]) for m in order}
        given: dict[str, list[TopicPartition]] = {m: [] for m in order}
        topics = sorted({t for m in order for t in members[m].topics})
        for topic in topics:
            # (load after one more partition, member position, member) for this topic's members.
            heap = [
                ((len(given[m]) + 1) / capacity[m], i, m)
                for i, m in enumerate(order)
                if topic in members[m].topics
            ]
            heapq.heapify(heap)
            for partition in range(cluster.count(topic)):
                _, i, member = heapq.heappop(heap)
                given[member].append(TopicPartition(topic, partition))
                heapq.heappush(heap, ((len(given[member]) + 1) / capacity[member], i, member))
        return {m: MemberAssignment(given[m]) for m in members}
