"""Sticky and cooperative-sticky on known cases, their user data, and the cooperative check."""

from __future__ import annotations

import pytest
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignorUserDataV1
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.structs import TopicPartition as PeerTopicPartition

from assignors import (
    ClusterView,
    CooperativeAssignmentError,
    MemberAssignment,
    MemberSubscription,
    TopicPartition,
    lookup,
    transferred_partitions,
    validate_cooperative,
)
from assignors.sticky_data import decode_sticky_user_data, encode_sticky_user_data
from assignors.wire import decode_subscription
from groupkit.errors import CorruptFrame


def tps(*names: str) -> list[TopicPartition]:
    """``tps("t0p1", "t2p0")`` -> TopicPartitions."""
    out = []
    for name in names:
        topic, partition = name.split("p")
        out.append(TopicPartition(topic, int(partition)))
    return out


def assigned(result: dict[str, MemberAssignment]) -> dict[str, set[TopicPartition]]:
    return {m: set(a.partitions) for m, a in result.items()}


def rejoin(result: dict[str, MemberAssignment], topics: dict[str, list[str]], generation: int):
    """Members rejoining with the sticky user data of ``result``, as Java members would."""
    return {
        m: MemberSubscription(
            topics[m], user_data=encode_sticky_user_data(result[m].partitions, generation)
        )
        for m in topics
    }


def test_kip54_example_uneven_subscriptions():
    cluster = ClusterView({"t0": 1, "t1": 2, "t2": 3})
    topics = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    first = lookup("sticky").assign(cluster, {m: MemberSubscription(t) for m, t in topics.items()})
    assert assigned(first) == {
        "C0": set(tps("t0p0")),
        "C1": set(tps("t1p0", "t1p1")),
        "C2": set(tps("t2p0", "t2p1", "t2p2")),
    }
    del topics["C0"]
    second = lookup("sticky").assign(cluster, rejoin(first, topics, 1))
    assert assigned(second) == {
        "C1": set(tps("t1p0", "t1p1", "t0p0")),
        "C2": set(tps("t2p0", "t2p1", "t2p2")),
    }


def test_kip54_example_member_leaves_and_nothing_else_moves():
    cluster = ClusterView({"t0": 2, "t1": 2, "t2": 2, "t3": 2})
    topics = {m: ["t0", "t1", "t2", "t3"] for m in ("C0", "C1", "C2")}
    first = lookup("sticky").assign(cluster, {m: MemberSubscription(t) for m, t in topics.items()})
    del topics["C1"]
    second = assigned(lookup("sticky").assign(cluster, rejoin(first, topics, 1)))
    for m in ("C0", "C2"):
        assert set(first[m].partitions) <= second[m]
    assert {len(p) for p in second.values()} == {4}


def test_higher_generation_wins_a_claimed_partition():
    cluster = ClusterView({"t": 2})
    members = {
        "old": MemberSubscription(["t"], owned_partitions=tps("tp0", "tp1"), generation=2),
        "new": MemberSubscription(["t"], owned_partitions=tps("tp0"), generation=3),
    }
    result = assigned(lookup("sticky").assign(cluster, members))
    assert result == {"new": set(tps("tp0")), "old": set(tps("tp1"))}


def test_a_moved_partition_goes_back_when_balance_allows():
    # Found by hypothesis: the balancing pass once moved b1 away from its owner needlessly.
    cluster = ClusterView({"a": 1, "b": 3})
    members = {
        "a": MemberSubscription(["a"]),
        "b": MemberSubscription(["a"]),
        "c": MemberSubscription(["a", "b"]),
        "aa": MemberSubscription(["a", "b"], owned_partitions=tps("ap0", "bp0", "bp1"), generation=0),
    }
    result = assigned(lookup("sticky").assign(cluster, members))
    assert result["aa"] == set(tps("bp0", "bp1"))


def test_user_data_is_java_layout_byte_for_byte():
    ours = encode_sticky_user_data(tps("tp2", "tp0", "up5"), generation=7)
    java_layout = StickyAssignorUserDataV1([("t", [0, 2]), ("u", [5])], 7).encode()
    assert ours == java_layout
    assert decode_sticky_user_data(java_layout) == (tuple(tps("tp0", "tp2", "up5")), 7)


def test_user_data_v0_has_no_generation():
    v0 = encode_sticky_user_data(tps("tp1"), version=0)
    assert v0 == StickyAssignorUserDataV1([("t", [1])], 0).encode()[:-4]
    assert decode_sticky_user_data(v0) == (tuple(tps("tp1")), -1)


@pytest.mark.parametrize("version", [0, 1])
def test_user_data_with_kafka_python_3_version_prefix_is_read(version):
    fields = ([("t", [3, 4])], 9) if version else ([("t", [3, 4])],)
    data = StickyAssignorUserData(*fields, version=version).encode()
    assert decode_sticky_user_data(data) == (tuple(tps("tp3", "tp4")), 9 if version else -1)


@pytest.mark.parametrize("data", [b"\x00", b"\x00\x00\x00\x05\x00\x01t", b"\xff" * 12])
def test_undecodable_user_data_raises_corrupt_frame(data):
    with pytest.raises(CorruptFrame):
        decode_sticky_user_data(data)


def test_sticky_ignores_undecodable_user_data_and_uses_owned_partitions():
    cluster = ClusterView({"t": 2})
    members = {
        "a": MemberSubscription(["t"], user_data=b"\xff\xff", owned_partitions=tps("tp1"), generation=1),
        "b": MemberSubscription(["t"]),
    }
    assert assigned(lookup("sticky").assign(cluster, members))["a"] == set(tps("tp1"))


def test_kafka_python_sticky_member_keeps_its_partitions_under_our_leader():
    peer = StickyPartitionAssignor._metadata(
        ["t"], [PeerTopicPartition("t", 1), PeerTopicPartition("t", 2)], 4
    ).encode()
    members = {
        "peer": decode_subscription(peer),
        "ours": decode_subscription(lookup("sticky").metadata(["t"])),
    }
    result = assigned(lookup("sticky").assign(ClusterView({"t": 4}), members))
    assert result["peer"] == set(tps("tp1", "tp2"))


def test_sticky_metadata_carries_the_remembered_assignment():
    assignor = lookup("sticky")
    assert decode_subscription(assignor.metadata(["t"])).user_data == b""
    assignor.on_assignment(MemberAssignment(tps("tp3", "tp1")), generation=6)
    # Under EAGER the runtime revoked everything, so it passes no owned partitions.
    sub = decode_subscription(assignor.metadata(["t"], (), 6))
    assert decode_sticky_user_data(sub.user_data) == (tuple(tps("tp1", "tp3")), 6)


def test_cooperative_metadata_carries_owned_partitions_and_generation():
    sub = decode_subscription(lookup("cooperative-sticky").metadata(["t"], tps("tp2"), 8))
    assert (sub.owned_partitions, sub.generation, sub.user_data) == (
        tuple(tps("tp2")),
        8,
        b"\x00\x00\x00\x08",
    )


def test_cooperative_reads_the_generation_from_user_data_for_old_subscriptions():
    cluster = ClusterView({"t": 1})
    members = {
        "a": MemberSubscription(["t"], owned_partitions=tps("tp0"), user_data=b"\x00\x00\x00\x02"),
        "b": MemberSubscription(["t"], owned_partitions=tps("tp0"), generation=1),
    }
    result = assigned(lookup("cooperative-sticky").assign(cluster, members))
    assert result == {"a": set(tps("tp0")), "b": set()}


def test_cooperative_hands_over_in_two_rounds():
    cluster = ClusterView({"t": 4})
    assignor = lookup("cooperative-sticky")
    owned = {"a": tps("tp0", "tp1", "tp2", "tp3"), "b": []}
    members = {m: MemberSubscription(["t"], owned_partitions=p, generation=3) for m, p in owned.items()}
    first = assignor.assign(cluster, members)
    assert assigned(first) == {"a": set(tps("tp0", "tp1")), "b": set()}
    validate_cooperative(owned, first)
    owned = {m: list(a.partitions) for m, a in first.items()}
    members = {m: MemberSubscription(["t"], owned_partitions=p, generation=4) for m, p in owned.items()}
    second = assignor.assign(cluster, members)
    assert assigned(second) == {"a": set(tps("tp0", "tp1")), "b": set(tps("tp2", "tp3"))}
    validate_cooperative(owned, second)


def test_validate_cooperative_rejects_a_direct_move():
    owned = {"a": tps("tp0", "tp1"), "b": []}
    moved = {"a": MemberAssignment(tps("tp0")), "b": MemberAssignment(tps("tp1"))}
    assert transferred_partitions(owned, moved) == set(tps("tp1"))
    with pytest.raises(CooperativeAssignmentError, match="t-1"):
        validate_cooperative(owned, moved)


def test_sticky_thousand_members_ten_thousand_partitions_one_leaves():
    # How fast is bench/assignment.py's to say (the medium and large cases); this checks the
    # uniform path's result at that size: balanced, and no member that stayed lost a partition.
    cluster = ClusterView({f"t{i}": 1000 for i in range(10)})
    members = {f"m{i:04d}": MemberSubscription(list(cluster.partitions)) for i in range(1000)}
    first = lookup("sticky").assign(cluster, members)
    del members["m0000"]
    members = {
        m: MemberSubscription(s.topics, owned_partitions=first[m].partitions, generation=1)
        for m, s in members.items()
    }
    second = lookup("sticky").assign(cluster, members)
    assert {len(a.partitions) for a in second.values()} == {10, 11}
    assert all(set(first[m].partitions) <= set(second[m].partitions) for m in members)
