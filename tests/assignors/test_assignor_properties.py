"""Properties every built-in assignor holds on hypothesis-generated groups."""

from __future__ import annotations

import random

import pytest
from hypothesis import given

from assignors import MemberSubscription, lookup, transferred_partitions
from tests.assignors.assignor_groups import (
    check_valid,
    counts,
    groups,
    is_balanced,
    previous_owners,
    subscribed_partitions,
)

EAGER_NAMES = ["range", "roundrobin", "sticky"]
ALL_NAMES = [*EAGER_NAMES, "cooperative-sticky"]


def shuffled(members: dict, seed: int) -> dict:
    items = list(members.items())
    random.Random(seed).shuffle(items)
    return dict(items)


@pytest.mark.parametrize("name", EAGER_NAMES)
@given(group=groups())
def test_eager_assigns_every_subscribed_partition_once(name, group):
    cluster, members = group
    check_valid(cluster, members, lookup(name).assign(cluster, members))


@pytest.mark.parametrize("name", ALL_NAMES)
@given(group=groups())
def test_same_input_same_output_in_any_member_order(name, group):
    cluster, members = group
    first = lookup(name).assign(cluster, members)
    assert lookup(name).assign(cluster, shuffled(members, 1)) == first
    assert lookup(name).assign(cluster, shuffled(members, 2)) == first


@given(group=groups(uniform=True))
def test_roundrobin_is_balanced_for_uniform_subscriptions(group):
    cluster, members = group
    sizes = counts(lookup("roundrobin").assign(cluster, members)).values()
    assert max(sizes) - min(sizes) <= 1


@given(group=groups())
def test_sticky_is_balanced(group):
    cluster, members = group
    result = lookup("sticky").assign(cluster, members)
    holdings = {m: set(a.partitions) for m, a in result.items()}
    assert is_balanced(members, holdings)
    by_subscription: dict[frozenset, list[int]] = {}
    for m, a in result.items():
        by_subscription.setdefault(frozenset(members[m].topics), []).append(len(a.partitions))
    for sizes in by_subscription.values():
        assert max(sizes) - min(sizes) <= 1


@given(group=groups())
def test_sticky_moves_only_what_balance_requires(group):
    cluster, members = group
    result = lookup("sticky").assign(cluster, members)
    holdings = {m: set(a.partitions) for m, a in result.items()}
    for tp, before in previous_owners(cluster, members).items():
        now = next(m for m, h in holdings.items() if tp in h)
        if now == before:
            continue
        # Handing tp back to its previous owner must break balance, or the move was needless.
        holdings[now].discard(tp)
        holdings[before].add(tp)
        assert not is_balanced(members, holdings), (tp, before, now)
        holdings[before].discard(tp)
        holdings[now].add(tp)


@given(group=groups(uniform=True))
def test_sticky_keeps_owned_partitions_up_to_the_quota(group):
    cluster, members = group
    result = lookup("sticky").assign(cluster, members)
    total = len(subscribed_partitions(cluster, members))
    quota = total // len(members)
    kept: dict[str, int] = dict.fromkeys(members, 0)
    for tp, before in previous_owners(cluster, members).items():
        kept[before] += tp in result[before].partitions
    owned = dict.fromkeys(members, 0)
    for before in previous_owners(cluster, members).values():
        owned[before] += 1
    for m in members:
        assert kept[m] >= min(owned[m], quota)


@given(group=groups())
def test_cooperative_withholds_only_partitions_another_member_owns(group):
    cluster, members = group
    result = lookup("cooperative-sticky").assign(cluster, members)
    check_valid(cluster, members, result, exactly_once=False)
    owned = {m: s.owned_partitions for m, s in members.items()}
    assert transferred_partitions(owned, result) == set()
    given_out = {tp for a in result.values() for tp in a.partitions}
    for tp in subscribed_partitions(cluster, members) - given_out:
        assert any(tp in s.owned_partitions for s in members.values()), tp


@given(group=groups())
def test_cooperative_matches_sticky_except_for_withheld_partitions(group):
    cluster, members = group
    cooperative = lookup("cooperative-sticky").assign(cluster, members)
    eager = lookup("sticky").assign(cluster, members)
    for m in members:
        assert set(cooperative[m].partitions) <= set(eager[m].partitions)


@given(group=groups())
def test_cooperative_follow_up_rounds_assign_everything(group):
    cluster, members = group
    assignor = lookup("cooperative-sticky")
    generation = 5
    for _ in range(3):
        result = assignor.assign(cluster, members)
        members = {
            m: MemberSubscription(
                s.topics,
                owned_partitions=result[m].partitions,
                generation=generation,
                group_instance_id=s.group_instance_id,
            )
            for m, s in members.items()
        }
        generation += 1
    check_valid(cluster, members, result)
