"""The consumer GroupProtocol on top of the assignors: pure, no network."""

from __future__ import annotations

import pytest

from assignors import (
    Assignor,
    ClusterView,
    CooperativeAssignmentError,
    MemberAssignment,
    RebalanceProtocol,
    TopicPartition,
)
from groupkit.errors import ConfigError, InvalidAssignmentError
from groupkit.group import GroupMember, GroupProtocol
from groupkit.group.consumer_protocol import ConsumerProtocol, choose_rebalance_protocol
from groupkit.protocol.consumer import Assignment, Subscription

TP = TopicPartition


def view(topics: frozenset[str]) -> ClusterView:
    return ClusterView({"a": 3, "b": 2})


def member(member_id: str, topics: list[str], owned: list[tuple[str, list[int]]] = (),
           generation: int = -1, version: int = 3) -> GroupMember:
    sub = Subscription(topics, None, list(owned), generation)
    return GroupMember(member_id, None, sub.encode(version))


class MoveEverything(Assignor):
    """Gives every partition to the last member: moves owned partitions in one round."""

    name = "mover"
    supported_protocols = (RebalanceProtocol.COOPERATIVE,)

    def assign(self, cluster, members):
        last = sorted(members)[-1]
        every = [TP(t, p) for t in sorted(cluster.partitions) for p in range(cluster.count(t))]
        return {last: MemberAssignment(every)}


class Twice(Assignor):
    name = "twice"

    def assign(self, cluster, members):
        return {m: MemberAssignment([TP("a", 0)]) for m in members}


def test_it_is_a_group_protocol() -> None:
    proto = ConsumerProtocol(["range"], cluster_view=view)
    assert isinstance(proto, GroupProtocol)
    assert proto.protocol_type == "consumer"


def test_rebalance_protocol_is_the_highest_all_assignors_support() -> None:
    assert ConsumerProtocol(["range", "cooperative-sticky"], cluster_view=view) \
        .rebalance_protocol is RebalanceProtocol.EAGER
    coop = ConsumerProtocol(["cooperative-sticky"], cluster_view=view)
    assert coop.rebalance_protocol is RebalanceProtocol.COOPERATIVE
    assert coop.is_cooperative("cooperative-sticky")
    with pytest.raises(ConfigError, match="share no rebalance protocol"):
        choose_rebalance_protocol([MoveEverything(), Twice()])


def test_join_protocols_in_preference_order_with_owned_generation_and_rack() -> None:
    owned = [TP("a", 1), TP("a", 0)]
    proto = ConsumerProtocol(["cooperative-sticky"], cluster_view=view, rack="r1")
    proto.subscribe(["b", "a"])
    [(name, metadata)] = proto.join_protocols(frozenset(owned), 7)
    sub = Subscription.decode(metadata)
    assert name == "cooperative-sticky"
    assert sub.topics == ["a", "b"]
    assert sub.owned_partitions == [("a", [0, 1])]
    assert sub.generation_id == 7
    assert sub.rack_id == "r1"
    names = [n for n, _ in ConsumerProtocol(["roundrobin", "range"], cluster_view=view)
             .join_protocols(frozenset(), -1)]
    assert names == ["roundrobin", "range"]


def test_leader_gives_every_member_a_real_assignment_covering_each_partition_once() -> None:
    proto = ConsumerProtocol(["range"], cluster_view=view)
    members = [member("m1", ["a", "b"]), member("m2", ["a"]), member("m3", ["b"], version=0),
               member("m4", ["a"]), member("m5", ["a"])]
    result = proto.assign("range", members)
    assert set(result) == {"m1", "m2", "m3", "m4", "m5"}
    owners: dict[TopicPartition, str] = {}
    for member_id, data in result.items():
        assert data, "an empty assignment makes Java members fail"
        for topic, parts in Assignment.decode(data).partitions:
            for p in parts:
                assert TP(topic, p) not in owners
                owners[TP(topic, p)] = member_id
    assert set(owners) == {TP("a", 0), TP("a", 1), TP("a", 2), TP("b", 0), TP("b", 1)}
    assert Assignment.decode(result["m3"]).version == 0
    assert Assignment.decode(result["m1"]).version == 3


def test_cooperative_leader_refuses_to_move_an_owned_partition_in_one_round() -> None:
    proto = ConsumerProtocol([MoveEverything()], cluster_view=view)
    members = [member("m1", ["a", "b"], [("a", [0])], generation=3), member("m2", ["a", "b"])]
    with pytest.raises(CooperativeAssignmentError, match="a-0"):
        proto.assign("mover", members)


def test_cooperative_sticky_keeps_owned_partitions_with_their_owner() -> None:
    proto = ConsumerProtocol(["cooperative-sticky"], cluster_view=view)
    members = [member("m1", ["a", "b"], [("a", [0, 1, 2]), ("b", [0, 1])], generation=4),
               member("m2", ["a", "b"])]
    result = {m: Assignment.decode(d).partitions for m, d in proto.assign(
        "cooperative-sticky", members).items()}
    # Nothing moves in one round: m2 waits until m1 has revoked what it gives up.
    assert result["m2"] == []
    assert sum(len(p) for _, p in result["m1"]) < 5


def test_an_assignor_giving_a_partition_twice_is_refused() -> None:
    proto = ConsumerProtocol([Twice()], cluster_view=view)
    with pytest.raises(InvalidAssignmentError, match="a-0"):
        proto.assign("twice", [member("m1", ["a"]), member("m2", ["a"])])


def test_on_assignment_returns_the_partitions() -> None:
    proto = ConsumerProtocol(["range"], cluster_view=view)
    data = Assignment([("a", [2, 0]), ("b", [1])]).encode()
    assert proto.on_assignment("range", data, 3) == {TP("a", 0), TP("a", 2), TP("b", 1)}


def test_an_unknown_protocol_name_is_an_error() -> None:
    proto = ConsumerProtocol(["range"], cluster_view=view)
    with pytest.raises(Exception, match="did not offer"):
        proto.on_assignment("roundrobin", Assignment([]).encode(), 3)
