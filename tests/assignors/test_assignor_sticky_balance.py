"""Sticky and cooperative-sticky on wider groups with unequal subscriptions, rejoining after a
previous assignment with members gone, new and resubscribed: valid, balanced as the Java
client's general path defines it, and nothing moved that need not."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, strategies as st

from assignors import ClusterView, MemberAssignment, MemberSubscription, TopicPartition, lookup
from assignors.sticky_data import encode_sticky_user_data
from tests.assignors.assignor_groups import (
    check_valid,
    is_balanced,
    needless_moves,
    previous_owners,
    unbalanced_topics,
)

NAMES = ["sticky", "cooperative-sticky"]
TOPICS = [f"t{i}" for i in range(10)]


@st.composite
def rejoining_groups(draw: st.DrawFn) -> tuple[ClusterView, dict, dict]:
    """A cluster, a first group and the second group that rejoins after its assignment: some
    members gone, some new, some subscribed to other topics now (first group, second group)."""
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=2, max_size=len(TOPICS), unique=True))
    cluster = ClusterView({t: draw(st.integers(0, 16)) for t in topics})
    subscription = st.lists(st.sampled_from(topics), min_size=1, max_size=len(topics), unique=True)
    size = draw(st.integers(2, 20))
    first = {f"m{i:02d}": draw(subscription) for i in range(size)}
    second = {m: t for m, t in first.items() if draw(st.integers(0, 4))}  # about 1 in 5 leaves
    for m in list(second):
        if not draw(st.integers(0, 5)):
            second[m] = draw(subscription)
    for i in range(draw(st.integers(0, 3))):
        second[f"n{i}"] = draw(subscription)
    return cluster, first, second


@st.composite
def messy_pasts(draw: st.DrawFn) -> tuple[ClusterView, dict[str, MemberSubscription]]:
    """A group whose previous owners are random: members owning far more than their share,
    partitions of topics they no longer subscribe to, partitions nobody owns."""
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=2, max_size=8, unique=True))
    cluster = ClusterView({t: draw(st.integers(0, 12)) for t in topics})
    size = draw(st.integers(2, 12))
    subscriptions = {
        f"m{i:02d}": draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        for i in range(size)
    }
    owners = st.sampled_from([*subscriptions, None])
    owned: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for t in topics:
        for p in range(cluster.count(t)):
            owner = draw(owners)
            if owner is not None:
                owned[owner].append(TopicPartition(t, p))
    return cluster, {
        m: MemberSubscription(t, owned_partitions=owned[m], generation=1)
        for m, t in subscriptions.items()
    }


def holdings(result: dict[str, MemberAssignment]) -> dict[str, set[TopicPartition]]:
    return {m: set(a.partitions) for m, a in result.items()}


def rejoin(name: str, topics: dict[str, list[str]], previous: dict[str, MemberAssignment],
           generation: int) -> dict[str, MemberSubscription]:
    """Members rejoining with what they were given, the way each assignor's members send it."""
    members = {}
    for m, t in topics.items():
        # In the wire's order (by topic, then partition), as decoded from a Subscription or
        # StickyAssignorUserData; an assignment's own order may differ.
        owned = tuple(sorted(previous[m].partitions)) if m in previous else ()
        if name == "sticky":
            user_data = encode_sticky_user_data(owned, generation) if m in previous else b""
            members[m] = MemberSubscription(t, user_data=user_data)
        else:
            members[m] = MemberSubscription(t, owned_partitions=owned, generation=generation)
    return members


def check_balanced_and_sticky(cluster, members, result):
    check_valid(cluster, members, result)
    held = holdings(result)
    assert unbalanced_topics(members, held) == []
    assert needless_moves(members, held, previous_owners(cluster, members)) == []


@pytest.mark.parametrize("name", NAMES)
@given(case=rejoining_groups())
# m03 keeps 2 of its 3 partitions of t0: which 2 follows the order its claims come in, so
# both assignors must see them in the wire's order.
@example(case=(
    ClusterView({"t0": 3, "t1": 0, "t2": 12, "t3": 0}),
    {"m00": ["t1"], "m01": ["t0", "t1", "t2"], "m02": ["t0", "t1", "t2"], "m03": ["t0"],
     "m04": ["t0", "t1", "t2"], "m05": ["t2"]},
    {"m03": ["t0"], "n0": ["t0"]},
))
def test_rejoining_unequal_groups_are_balanced_and_sticky(name, case):
    cluster, first_topics, second_topics = case
    assignor = lookup(name)
    first = assignor.assign(cluster, {m: MemberSubscription(t) for m, t in first_topics.items()})
    members = rejoin(name, second_topics, first, 1)
    second = assignor.assign(cluster, members)
    if name == "sticky":
        check_balanced_and_sticky(cluster, members, second)
    else:
        # Cooperative: what it withholds is exactly what sticky moves between members.
        eager = lookup("sticky").assign(cluster, rejoin("sticky", second_topics, first, 1))
        check_balanced_and_sticky(cluster, rejoin("sticky", second_topics, first, 1), eager)
        for m in members:
            owned = set(members[m].owned_partitions)
            taken_from_others = {
                tp for tp in eager[m].partitions
                if tp not in owned and any(tp in set(s.owned_partitions) for s in members.values())
            }
            assert set(second[m].partitions) == set(eager[m].partitions) - taken_from_others


@given(group=messy_pasts())
def test_messy_pasts_are_balanced_and_sticky(group):
    # Balancing such a past moves partitions back and forth; each one that did not need to
    # end up moved goes back to its previous owner.
    cluster, members = group
    check_balanced_and_sticky(cluster, members, lookup("sticky").assign(cluster, members))


@pytest.mark.parametrize("name", NAMES)
@given(case=rejoining_groups())
def test_a_balanced_assignment_comes_back_unchanged(name, case):
    # Nothing moves that need not: members rejoining with a balanced assignment keep all of it.
    cluster, first_topics, _ = case
    assignor = lookup(name)
    first = assignor.assign(cluster, {m: MemberSubscription(t) for m, t in first_topics.items()})
    again = assignor.assign(cluster, rejoin(name, first_topics, first, 1))
    assert holdings(again) == holdings(first)


@given(case=rejoining_groups(), data=st.data())
def test_the_per_topic_balance_check_is_the_pairwise_one(case, data):
    # The checker the tests above use, against the plain pairwise definition.
    cluster, topics, _ = case
    members = {m: MemberSubscription(t) for m, t in topics.items()}
    everything = [TopicPartition(t, p) for t in cluster.partitions for p in range(cluster.count(t))]
    held: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for tp in everything:
        takers = [m for m, t in topics.items() if tp.topic in t]
        if takers:
            held[data.draw(st.sampled_from(takers))].add(tp)
    assert (unbalanced_topics(members, held) == []) == is_balanced(members, held)


def mid_size_group(seed: int) -> tuple[ClusterView, dict[str, list[str]]]:
    """150 members, each on 5 to 60 of 80 topics of 1 to 20 partitions."""
    rng = random.Random(seed)
    names = [f"t{i:02d}" for i in range(80)]
    cluster = ClusterView({t: rng.randint(1, 20) for t in names})
    return cluster, {f"m{i:03d}": rng.sample(names, rng.randint(5, 60)) for i in range(150)}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [1, 2])
def test_mid_size_unequal_group_fresh_then_two_leave(name, seed):
    cluster, topics = mid_size_group(seed)
    assignor = lookup(name)
    members = {m: MemberSubscription(t) for m, t in topics.items()}
    first = assignor.assign(cluster, members)
    check_balanced_and_sticky(cluster, members, first)
    del topics["m000"], topics["m077"]
    members = rejoin(name, topics, first, 1)
    second = assignor.assign(cluster, members)
    if name == "sticky":
        check_balanced_and_sticky(cluster, members, second)
    else:
        # Partitions changing owner are withheld this round; the follow-up round hands them
        # over, and then all is given, balanced.
        check_valid(cluster, members, second, exactly_once=False)
        members = rejoin(name, topics, second, 2)
        check_balanced_and_sticky(cluster, members, assignor.assign(cluster, members))


@given(
    counts=st.lists(st.integers(0, 8), min_size=1, max_size=12),
    free=st.integers(1, 40),
    data=st.data(),
)
def test_placement_counts_are_one_at_a_time_least_loaded(counts, free, data):
    # sticky_loops.place computes in one step the counts that giving each partition in turn
    # to the least loaded eligible member (ties to the earlier member) ends at.
    from assignors import sticky_loops

    eligible = sorted(data.draw(st.sets(st.integers(0, len(counts) - 1), min_size=1)))
    expected = list(counts)
    for _ in range(free):
        expected[min(eligible, key=lambda m: (expected[m], m))] += 1
    for loops in filter(None, (sticky_loops.PYTHON, sticky_loops.NATIVE)):
        got, holding = list(counts), {}
        loops.place(eligible, got, list(range(free)), holding)
        assert got == expected
        assert sorted(i for part in holding.values() for i in part) == list(range(free))
        assert all(len(holding.get(m, [])) == got[m] - counts[m] for m in range(len(counts)))
