"""Hypothesis strategies for consumer groups, and the checks every assignor result must pass."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from hypothesis import strategies as st

from assignors import (
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    TopicPartition,
    member_order,
)

TOPICS = ["a", "b", "c", "d", "e"]


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    uniform: bool | None = None,
    with_history: bool = True,
    max_members: int = 8,
) -> tuple[ClusterView, dict[str, MemberSubscription]]:
    """A cluster and a group: random topic sizes (a topic may be missing), subscriptions,
    static ids, and previous ownership with generations, stale claims and conflicts."""
    topic_names = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=5, unique=True))
    counts = {t: draw(st.integers(0, 12)) for t in topic_names}
    if draw(st.booleans()):
        del counts[topic_names[-1]]  # subscribed to but absent from the cluster
    cluster = ClusterView(counts)
    size = draw(st.integers(1, max_members))
    ids = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=size, max_size=size, unique=True))
    if uniform is None:
        uniform = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(topic_names), min_size=1, unique=True))
    everything = [TopicPartition(t, p) for t in topic_names for p in range(counts.get(t, 0) + 1)]
    # Churn: the previous owners were a few departed members plus some of the current ones,
    # dealt partitions in turn (a near-balanced past), or random claims (a messy past).
    dealt: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    if with_history and draw(st.booleans()):
        past = [m for m in ids if draw(st.booleans())] + ["gone1", "gone2"][: draw(st.integers(0, 2))]
        if past:
            for i, tp in enumerate(draw(st.permutations(everything))):
                if past[i % len(past)] in dealt:
                    dealt[past[i % len(past)]].append(tp)
    members = {}
    for member_id in ids:
        topics = shared if uniform else draw(
            st.lists(st.sampled_from(topic_names), min_size=1, unique=True)
        )
        owned = dealt[member_id]
        generation = 3 if owned else -1
        if with_history and everything and draw(st.integers(0, 3)) == 0:
            owned = draw(st.lists(st.sampled_from(everything), unique=True, max_size=len(everything)))
            generation = draw(st.integers(-1, 4))
        static = draw(st.none() | st.text("xyz", min_size=1, max_size=2))
        members[member_id] = MemberSubscription(
            topics, owned_partitions=owned, generation=generation, group_instance_id=static
        )
    # Static instance ids are unique within a group.
    seen: set[str] = set()
    for member_id, sub in list(members.items()):
        if sub.group_instance_id in seen:
            members[member_id] = MemberSubscription(
                sub.topics, sub.owned_partitions, sub.generation, group_instance_id=None
            )
        elif sub.group_instance_id is not None:
            seen.add(sub.group_instance_id)
    return cluster, members


def subscribed_partitions(
    cluster: ClusterView, members: Mapping[str, MemberSubscription]
) -> set[TopicPartition]:
    """Every partition some member subscribes to and the cluster has."""
    topics = {t for sub in members.values() for t in sub.topics}
    return {TopicPartition(t, p) for t in topics for p in range(cluster.count(t))}


def check_valid(
    cluster: ClusterView,
    members: Mapping[str, MemberSubscription],
    result: Mapping[str, MemberAssignment],
    *,
    exactly_once: bool = True,
) -> None:
    """Every member answered; partitions real, subscribed by their member, never given twice;
    with ``exactly_once`` every subscribed partition is given."""
    assert set(result) == set(members)
    given = Counter(tp for a in result.values() for tp in a.partitions)
    assert all(n == 1 for n in given.values()), [tp for tp, n in given.items() if n > 1]
    for member_id, assignment in result.items():
        for tp in assignment.partitions:
            assert tp.topic in members[member_id].topics
            assert 0 <= tp.partition < cluster.count(tp.topic)
    if exactly_once:
        assert set(given) == subscribed_partitions(cluster, members)


def counts(result: Mapping[str, MemberAssignment]) -> dict[str, int]:
    return {m: len(a.partitions) for m, a in result.items()}


def is_balanced(
    members: Mapping[str, MemberSubscription], holdings: Mapping[str, set[TopicPartition]]
) -> bool:
    """No partition could move to another member subscribed to its topic holding two fewer."""
    sizes = {m: len(h) for m, h in holdings.items()}
    for holder, held in holdings.items():
        topics = {tp.topic for tp in held}
        for other, sub in members.items():
            if sizes[holder] - sizes[other] >= 2 and topics & set(sub.topics):
                return False
    return True


def previous_owners(
    cluster: ClusterView, members: Mapping[str, MemberSubscription]
) -> dict[TopicPartition, str]:
    """Who owned each partition before, by the rule: higher generation wins, then member order;
    only owners still subscribed to the topic count."""
    owners: dict[TopicPartition, tuple[int, str]] = {}
    for member_id in member_order(members):
        sub = members[member_id]
        for tp in sub.owned_partitions:
            if not 0 <= tp.partition < cluster.count(tp.topic):
                continue
            if tp not in owners or sub.generation > owners[tp][0]:
                owners[tp] = (sub.generation, member_id)
    return {
        tp: member_id
        for tp, (_, member_id) in owners.items()
        if tp.topic in members[member_id].topics
        and any(tp.topic in s.topics for s in members.values())
    }


def unbalanced_topics(
    members: Mapping[str, MemberSubscription], holdings: Mapping[str, set[TopicPartition]]
) -> list[str]:
    """Topics whose most loaded holder has two or more partitions more than their least loaded
    subscriber: ``is_balanced`` per topic, in time linear in the subscriptions."""
    sizes = {m: len(h) for m, h in holdings.items()}
    most: dict[str, int] = {}
    for m, held in holdings.items():
        for topic in {tp.topic for tp in held}:
            most[topic] = max(most.get(topic, 0), sizes[m])
    least: dict[str, int] = {}
    for m, sub in members.items():
        for topic in set(sub.topics):
            least[topic] = min(least.get(topic, sizes[m]), sizes[m])
    return sorted(t for t in most if t in least and most[t] - least[t] >= 2)


def needless_moves(
    members: Mapping[str, MemberSubscription],
    holdings: Mapping[str, set[TopicPartition]],
    before: Mapping[TopicPartition, str],
) -> list[TopicPartition]:
    """Partitions that moved away from a previous owner (``previous_owners``) although handing
    each back alone would leave the (balanced) assignment balanced."""
    holder = {tp: m for m, held in holdings.items() for tp in held}
    needless = []
    for tp, previous in sorted(before.items()):
        now = holder.get(tp)
        if now is None or now == previous:
            continue
        holdings[now].discard(tp)
        holdings[previous].add(tp)
        if not unbalanced_topics(members, holdings):
            needless.append(tp)
        holdings[previous].discard(tp)
        holdings[now].add(tp)
    return needless
