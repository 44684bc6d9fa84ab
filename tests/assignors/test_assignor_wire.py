"""Assignor values to and from the consumer embedded protocol, read by kafka-python."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from assignors import ClusterView, MemberAssignment, MemberSubscription, TopicPartition, lookup
from assignors.wire import decode_assignment, decode_subscription, encode_assignment


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_kafka_python_reads_our_subscription(name):
    data = lookup(name).metadata(["b", "a"], [TopicPartition("a", 1)], 5, rack="r1")
    peer = ConsumerProtocolSubscription.decode(data)
    assert peer.topics == ["a", "b"]
    assert [(tp.topic, tp.partitions) for tp in peer.owned_partitions] == [("a", [1])]
    assert (peer.generation_id, peer.rack_id) == (5, "r1")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_we_read_kafka_python_subscriptions_of_every_version(version):
    fields = {"version": version, "topics": ["t"], "user_data": b"x"}
    if version >= 1:
        fields["owned_partitions"] = [ConsumerProtocolSubscription.TopicPartition(topic="t", partitions=[2])]
    if version >= 2:
        fields["generation_id"] = 9
    if version >= 3:
        fields["rack_id"] = "r2"
    sub = decode_subscription(ConsumerProtocolSubscription(**fields).encode(), "static-1")
    assert sub.topics == ("t",) and sub.user_data == b"x"
    assert sub.owned_partitions == ((TopicPartition("t", 2),) if version >= 1 else ())
    assert sub.generation == (9 if version >= 2 else -1)
    assert sub.rack == ("r2" if version >= 3 else None)
    assert sub.group_instance_id == "static-1"


def test_assignment_round_trips_and_kafka_python_reads_it():
    assignment = MemberAssignment([TopicPartition("b", 0), TopicPartition("a", 3), TopicPartition("a", 1)])
    data = encode_assignment(assignment)
    assert decode_assignment(data) == MemberAssignment(sorted(assignment.partitions))
    peer = ConsumerProtocolAssignment.decode(data)
    assert [(tp.topic, tp.partition) for tp in peer.partitions()] == [("a", 1), ("a", 3), ("b", 0)]


def test_an_empty_assignment_is_still_a_real_assignment():
    data = encode_assignment(MemberAssignment([]))
    assert data
    assert ConsumerProtocolAssignment.decode(data).partitions() == []


def test_value_types_reject_what_would_silently_mislead():
    with pytest.raises(TypeError, match="collection of topic names"):
        MemberSubscription("orders")
    with pytest.raises(ValueError, match="negative"):
        ClusterView({"t": -1})
    assert MemberSubscription(["t"], owned_partitions=[("t", 1)]).owned_partitions == (
        TopicPartition("t", 1),
    )
