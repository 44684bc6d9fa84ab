"""The round-robin assignor: all partitions in topic order dealt to members in turn."""

from __future__ import annotations

from collections.abc import Mapping

from assignors._types import ClusterView, MemberAssignment, MemberSubscription, TopicPartition
from assignors.base import Assignor, member_order


class RoundRobinAssignor(Assignor):
    """Java's RoundRobinAssignor: deal each partition to the next member subscribed to its topic."""

    name = "roundrobin"

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        order = member_order(members)
        subscribed = {member_id: frozenset(members[member_id].topics) for member_id in order}
        topics = sorted(set().union(*subscribed.values())) if subscribed else []
        assigned: dict[str, list[TopicPartition]] = {member_id: [] for member_id in order}
        position = 0
        size = len(order)
        for topic in topics:
            count = cluster.count(topic)
            if not count:
                continue
            # Every topic here has a subscriber, so each scan below finds one within `size` steps.
            if all(topic in subscribed[m] for m in order):
                for partition in range(count):
                    assigned[order[(position + partition) % size]].append(
                        TopicPartition(topic, partition)
                    )
                position = (position + count) % size
                continue
            for partition in range(count):
                while topic not in subscribed[order[position]]:
                    position = (position + 1) % size
                assigned[order[position]].append(TopicPartition(topic, partition))
                position = (position + 1) % size
        return {member_id: MemberAssignment(assigned[member_id]) for member_id in members}
