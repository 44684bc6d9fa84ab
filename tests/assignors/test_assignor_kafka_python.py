"""Range and round-robin give kafka-python's (and so Java's) answer for the same group."""

from __future__ import annotations

import pytest
from hypothesis import given

from assignors import ClusterView, MemberSubscription, lookup
from tests.assignors.assignor_groups import groups
from tests.assignors.kafka_python_peer import peer_assign


def ours(name: str, cluster: ClusterView, members: dict) -> dict:
    return {m: list(a.partitions) for m, a in lookup(name).assign(cluster, members).items()}


@given(group=groups(with_history=False))
def test_range_same_as_kafka_python(group):
    cluster, members = group
    assert ours("range", cluster, members) == peer_assign("range", cluster, members)


@given(group=groups(with_history=False, uniform=True))
def test_roundrobin_same_as_kafka_python(group):
    # Uniform subscriptions only: kafka-python 3.0.12's round-robin raises KeyError as soon as it
    # has to skip a member not subscribed to a topic (it rebinds member_id to a tuple).
    cluster, members = group
    assert ours("roundrobin", cluster, members) == peer_assign("roundrobin", cluster, members)


def test_roundrobin_skips_members_not_subscribed_like_java():
    # The example in the javadoc of Java's RoundRobinAssignor.
    cluster = ClusterView({"t0": 1, "t1": 2, "t2": 3})
    members = {
        "C0": MemberSubscription(["t0"]),
        "C1": MemberSubscription(["t0", "t1"]),
        "C2": MemberSubscription(["t0", "t1", "t2"]),
    }
    result = {m: [tuple(tp) for tp in a] for m, a in ours("roundrobin", cluster, members).items()}
    assert result == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_static_members_come_first_in_instance_id_order(name):
    cluster = ClusterView({"t": 3})
    members = {
        "a-dynamic": MemberSubscription(["t"]),
        "z-static": MemberSubscription(["t"], group_instance_id="i1"),
        "b-static": MemberSubscription(["t"], group_instance_id="i2"),
    }
    result = lookup(name).assign(cluster, members)
    assert [tp.partition for tp in result["z-static"].partitions] == [0]
    assert [tp.partition for tp in result["b-static"].partitions] == [1]
    assert [tp.partition for tp in result["a-dynamic"].partitions] == [2]
    assert {m: list(a.partitions) for m, a in result.items()} == peer_assign(name, cluster, members)
