"""Rack-aware range (KIP-881): rack-local partitions first, per-topic quotas unchanged."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, strategies as st

from assignors import ClusterView, MemberSubscription, TopicPartition, lookup
from tests.assignors.assignor_groups import check_valid, groups

RACKS = ["r0", "r1", "r2"]


def by_member(cluster: ClusterView, members: dict) -> dict[str, list[int]]:
    result = lookup("range").assign(cluster, members)
    return {m: [tp.partition for tp in a.partitions] for m, a in result.items()}


def one_rack_each(count: int) -> dict[TopicPartition, set[str]]:
    return {TopicPartition("t", p): {RACKS[p % 3]} for p in range(count)}


def test_members_get_partitions_with_a_replica_in_their_rack():
    cluster = ClusterView({"t": 6}, racks=one_rack_each(6))
    members = {f"c{i}": MemberSubscription(["t"], rack=RACKS[i]) for i in range(3)}
    assert by_member(cluster, members) == {"c0": [0, 3], "c1": [1, 4], "c2": [2, 5]}


def test_plain_range_when_every_partition_is_on_every_rack():
    cluster = ClusterView(
        {"t": 6}, racks={TopicPartition("t", p): set(RACKS) for p in range(6)}
    )
    members = {f"c{i}": MemberSubscription(["t"], rack=RACKS[i]) for i in range(3)}
    assert by_member(cluster, members) == {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}


def test_plain_range_when_members_send_no_rack():
    cluster = ClusterView({"t": 6}, racks=one_rack_each(6))
    members = {f"c{i}": MemberSubscription(["t"]) for i in range(3)}
    assert by_member(cluster, members) == {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}


def test_plain_range_when_member_racks_hold_no_replica():
    cluster = ClusterView({"t": 6}, racks=one_rack_each(6))
    members = {f"c{i}": MemberSubscription(["t"], rack="elsewhere") for i in range(3)}
    assert by_member(cluster, members) == {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]}


def test_member_without_rack_takes_what_is_left_in_order():
    cluster = ClusterView({"t": 5}, racks=one_rack_each(5))
    members = {
        "c0": MemberSubscription(["t"], rack="r0"),
        "c1": MemberSubscription(["t"]),
        "c2": MemberSubscription(["t"], rack="r2"),
    }
    # c0 (quota 2) takes its rack's 0 and 3; c1 has no rack and takes the next two in order;
    # c2's rack partitions are 2 and 5, but 2 is gone, so it fills with what is left.
    assert by_member(cluster, members) == {"c0": [0, 3], "c1": [1, 2], "c2": [4]}


@given(group=groups(with_history=False), data=st.data())
def test_rack_aware_range_keeps_per_topic_quotas(group, data):
    cluster, members = group
    racks = {
        TopicPartition(t, p): set(data.draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=2)))
        for t, n in cluster.partitions.items()
        for p in range(n)
    }
    cluster = ClusterView(cluster.partitions, racks=racks)
    members = {
        m: MemberSubscription(s.topics, rack=data.draw(st.none() | st.sampled_from(RACKS)))
        for m, s in members.items()
    }
    result = lookup("range").assign(cluster, members)
    check_valid(cluster, members, result)
    for topic, count in cluster.partitions.items():
        subscribers = [m for m, s in members.items() if topic in s.topics]
        if not subscribers or not count:
            continue
        sizes = Counter(
            sum(tp.topic == topic for tp in result[m].partitions) for m in subscribers
        )
        base, extra = divmod(count, len(subscribers))
        assert sizes[base + 1] == extra
        assert sizes[base] == len(subscribers) - extra
