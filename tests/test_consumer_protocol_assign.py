"""The consumer GroupProtocol on top of the assignors: pure, no network."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import example, given, settings, strategies as st

from assignors import (
    Assignor,
    ClusterView,
    CooperativeAssignmentError,
    MemberAssignment,
    MemberSubscription,
    RebalanceProtocol,
    TopicPartition,
    lookup,
    sticky_loops,
    validate_cooperative,
)
from assignors._types import group_by_topic
from assignors.sticky_data import encode_sticky_user_data
from groupkit.errors import ConfigError, InvalidAssignmentError
from groupkit.group import GroupMember, GroupProtocol
from groupkit.group.consumer_protocol import (
    ConsumerProtocol,
    _check_exclusive,
    _checked_by_number,
    _current_owners,
    choose_rebalance_protocol,
)
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


# The leader's checks by partition number (_checked_by_number) against the checks they stand
# in for, and the whole step with the C and the Python codec and loops.

CLUSTER = ClusterView({"a": 3, "b": 2, "c": 0})
# Mostly partitions of the cluster, some of a topic it lacks or past a topic's count.
some_tps = st.sampled_from([TP("a", 0), TP("a", 1), TP("a", 2), TP("b", 0), TP("b", 1)]) \
    | st.builds(TP, st.sampled_from(["a", "b", "c", "gone"]), st.integers(-1, 3))
groups = st.lists(
    st.tuples(st.lists(some_tps, max_size=4), st.integers(-1, 3), st.lists(some_tps, max_size=4)),
    min_size=1, max_size=5,
)
A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)


def old_checks_pass(subs, full, cooperative: bool) -> bool:
    try:
        _check_exclusive("x", full)
        if cooperative:
            validate_cooperative(_current_owners(subs), full)
    except (InvalidAssignmentError, CooperativeAssignmentError):
        return False
    return True


@contextlib.contextmanager
def loops(which):
    saved = sticky_loops.active
    sticky_loops.active = which
    try:
        yield
    finally:
        sticky_loops.active = saved


ALL_LOOPS = [lp for lp in (sticky_loops.PYTHON, sticky_loops.NATIVE) if lp is not None]


@pytest.mark.parametrize("which", ALL_LOOPS, ids=lambda lp: lp.name)
@given(group=groups, cooperative=st.booleans(), keep=st.lists(st.booleans(), min_size=5))
@settings(max_examples=400)
# Another's partition first, then its own: looked at although the member keeps what it owns.
@example(group=[([A0], 3, [A1, A0]), ([A1], 3, [])], cooperative=True, keep=[False] * 5)
# The same with a partition claimed twice (B0, stale in the third), so owners are resolved.
@example(group=[([A0, B0], 3, [A1, A0]), ([A1], 3, []), ([B0], 1, [])], cooperative=True,
         keep=[False] * 5)
# Owning nothing, given another's partition.
@example(group=[([A0], 2, [A1]), ([], -1, [A0])], cooperative=True, keep=[False] * 5)
# Given what it owns, then another's.
@example(group=[([A0], 2, []), ([A1], 2, [A1, A0])], cooperative=True, keep=[False] * 5)
# Claimed by two members of one generation: the earlier owns it, so it moves to the later.
@example(group=[([A0], 2, []), ([A0], 2, [A0])], cooperative=True, keep=[False] * 5)
@example(group=[([A0], 2, [A0]), ([A0], 2, [])], cooperative=True, keep=[False] * 5)
@example(group=[([A0], 1, []), ([A0], 2, [A0])], cooperative=True, keep=[False] * 5)
@example(group=[([], 1, [A0, A1]), ([], 2, [A0])], cooperative=False, keep=[False] * 5)
def test_checks_by_number_pass_exactly_when_the_checks_pass(which, group, cooperative, keep):
    subs = {f"m{i}": MemberSubscription(["a", "b"], owned, generation)
            for i, (owned, generation, _) in enumerate(group)}
    # Some members get back the very tuple they sent, as the sticky assignors give it.
    full = {m: MemberAssignment(subs[m].owned_partitions if keep[i] else given)
            for i, (m, (_, _, given)) in enumerate(zip(subs, group, strict=True))}
    with loops(which):
        by_number = _checked_by_number(CLUSTER, subs, full, cooperative)
    passes = old_checks_pass(subs, full, cooperative)
    assert passes or not by_number
    if all(0 <= tp.partition < CLUSTER.count(tp.topic) for a in full.values() for tp in a.partitions):
        assert by_number == passes


def leave_group(name: str) -> tuple[ConsumerProtocol, list[GroupMember]]:
    """30 members on 12 topics of 7 after the first of 31 left, as the runtime sends them."""
    counts = {f"t{k:02d}": 7 for k in range(12)}
    ids = [f"m{i:02d}" for i in range(31)]
    first = lookup(name).assign(ClusterView(counts), {m: MemberSubscription(counts) for m in ids})
    members = []
    for m in ids[1:]:
        held = sorted(first[m].partitions)
        if name == "sticky":
            sub = Subscription(sorted(counts), encode_sticky_user_data(held, 1))
        else:
            sub = Subscription(sorted(counts), struct.pack(">i", 1), group_by_topic(held), 1)
        members.append(GroupMember(m, None, sub.encode()))
    return ConsumerProtocol([name], cluster_view=lambda topics: ClusterView(counts)), members


@pytest.mark.skipif(sticky_loops.NATIVE is None, reason="the assignors C extension is not built")
@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky", "range"])
def test_the_leaders_step_gives_the_same_bytes_in_c_and_in_python(name):
    proto, members = leave_group(name)
    with loops(sticky_loops.PYTHON):
        python = proto.assign(name, members)
    with loops(sticky_loops.NATIVE):
        native = proto.assign(name, members)
    assert native == python
    given = [(t, p) for d in native.values() for t, ps in Assignment.decode(d).partitions for p in ps]
    assert len(given) == len(set(given)) == 12 * 7


@pytest.mark.parametrize("which", ALL_LOOPS, ids=lambda lp: lp.name)
def test_a_move_in_one_round_is_refused_with_the_same_message_either_way(which):
    proto = ConsumerProtocol([MoveEverything()], cluster_view=view)
    members = [member("m1", ["a", "b"], [("a", [0]), ("b", [1])], generation=3),
               member("m2", ["a", "b"], [("a", [2])], generation=3)]
    with loops(which), pytest.raises(CooperativeAssignmentError) as caught:
        proto.assign("mover", members)
    assert str(caught.value).startswith("2 partition(s) would change owner")
    assert "a-0, b-1" in str(caught.value)
