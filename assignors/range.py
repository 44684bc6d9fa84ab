"""The range assignor: per topic, contiguous partition ranges in member order (KIP-881 racks)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from assignors._types import ClusterView, MemberAssignment, MemberSubscription, TopicPartition
from assignors.base import Assignor, member_order


class RangeAssignor(Assignor):
    """Java's RangeAssignor: per topic, the first ``n % m`` members take one partition extra.

    When members send racks and the cluster view knows replica racks, each member first takes
    partitions with a replica in its rack, up to its quota, then the rest fill as usual.
    """

    name = "range"

    def assign(
        self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
    ) -> dict[str, MemberAssignment]:
        order = member_order(members)
        subscribers: dict[str, list[str]] = defaultdict(list)
        for member_id in order:
            for topic in set(members[member_id].topics):
                subscribers[topic].append(member_id)
        assigned: dict[str, list[TopicPartition]] = {member_id: [] for member_id in order}
        racks_known = bool(cluster.racks) and any(members[m].rack for m in order)
        rack_aware_topics = False
        for topic in sorted(subscribers):
            count = cluster.count(topic)
            if not count:
                continue
            consumers = subscribers[topic]
            racks = {m: members[m].rack for m in consumers} if racks_known else {}
            if racks and _rack_aware(topic, count, racks, cluster.racks):
                _assign_by_rack(topic, count, racks, cluster.racks, assigned)
                rack_aware_topics = True
            else:
                _assign_ranges(topic, count, consumers, assigned)
        # Topics go in name order and ranges ascend, so only rack-aware topics can unsort a list.
        arrange = sorted if rack_aware_topics else list
        return {
            member_id: MemberAssignment(arrange(assigned[member_id])) for member_id in members
        }


def _assign_ranges(
    topic: str, count: int, consumers: list[str], assigned: dict[str, list[TopicPartition]]
) -> None:
    per_consumer, extra = divmod(count, len(consumers))
    start = 0
    # With fewer partitions than consumers, the consumers past `count` get nothing.
    for i in range(min(len(consumers), count)):
        length = per_consumer + (1 if i < extra else 0)
        assigned[consumers[i]].extend(
            [TopicPartition(topic, p) for p in range(start, start + length)]
        )
        start += length


def _assign_by_rack(
    topic: str,
    count: int,
    consumer_racks: dict[str, str | None],
    replica_racks: Mapping[TopicPartition, frozenset[str]],
    assigned: dict[str, list[TopicPartition]],
) -> None:
    """Java's two passes: rack-matching partitions up to each quota, then the rest in order."""
    consumers = list(consumer_racks)
    per_consumer, extra = divmod(count, len(consumers))
    unassigned = [TopicPartition(topic, p) for p in range(count)]
    taken = {member_id: 0 for member_id in consumers}

    def fill(match_racks: bool) -> None:
        nonlocal unassigned, extra
        for member_id in consumers:
            if not unassigned:
                return
            room = max(0, per_consumer + (1 if extra > 0 else 0) - taken[member_id])
            rack = consumer_racks[member_id]
            chosen: list[TopicPartition] = []
            for tp in unassigned:
                if len(chosen) >= room:
                    break
                if not match_racks or rack is None or rack in replica_racks.get(tp, ()):
                    chosen.append(tp)
            if not chosen:
                continue
            taken[member_id] += len(chosen)
            if taken[member_id] > per_consumer:
                extra -= 1
            assigned[member_id].extend(chosen)
            picked = set(chosen)
            unassigned = [tp for tp in unassigned if tp not in picked]

    fill(match_racks=True)
    fill(match_racks=False)


def _rack_aware(
    topic: str,
    count: int,
    consumer_racks: dict[str, str | None],
    replica_racks: Mapping[TopicPartition, frozenset[str]],
) -> bool:
    """KIP-881: racks matter when some consumer rack holds replicas and racks differ by partition."""
    member_racks = {rack for rack in consumer_racks.values() if rack is not None}
    if not member_racks or not replica_racks:
        return False
    per_partition = [replica_racks.get(TopicPartition(topic, p), frozenset()) for p in range(count)]
    all_racks = frozenset().union(*per_partition)
    if member_racks.isdisjoint(all_racks):
        return False
    return any(racks != all_racks for racks in per_partition)
