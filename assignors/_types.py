"""Value types shared by every assignor; no groupkit imports, so ``groupkit`` can re-export them."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import NamedTuple, cast

import attrs


class TopicPartition(NamedTuple):
    """One partition of one topic."""

    topic: str
    partition: int


class RebalanceProtocol(enum.IntEnum):
    """How members hand partitions over (KIP-429): revoke everything first, or only what moves."""

    EAGER = 0
    COOPERATIVE = 1


def _partition_counts(value: Mapping[str, int]) -> dict[str, int]:
    counts = {str(topic): int(count) for topic, count in value.items()}
    negative = sorted(topic for topic, count in counts.items() if count < 0)
    if negative:
        raise ValueError(f"partition counts must be 0 or more; negative for {negative}")
    return counts


def _rack_map(
    value: Mapping[TopicPartition, Iterable[str]] | None,
) -> dict[TopicPartition, frozenset[str]]:
    if not value:
        return {}
    return {TopicPartition(*tp): frozenset(racks) for tp, racks in value.items()}


def _topic_names(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"topics must be a collection of topic names, not the single {value!r}")
    return tuple(value)


def _topic_partitions(value: Iterable[tuple[str, int]]) -> tuple[TopicPartition, ...]:
    value = tuple(value)
    if value and set(map(type, value)) != {TopicPartition}:
        return tuple(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)
    # The check above found every item already a TopicPartition (or none at all).
    return cast("tuple[TopicPartition, ...]", value)


@attrs.frozen(eq=False)
class ClusterView:
    """What the leader knows of the cluster: partition count per topic, replica racks where known."""

    partitions: dict[str, int] = attrs.field(converter=_partition_counts)
    racks: dict[TopicPartition, frozenset[str]] = attrs.field(default=None, converter=_rack_map)

    def count(self, topic: str) -> int:
        """Partitions of ``topic``; 0 when the topic is unknown to the cluster."""
        return self.partitions.get(topic, 0)


@attrs.frozen
class MemberSubscription:
    """One member's JoinGroup metadata as an assignor sees it."""

    topics: tuple[str, ...] = attrs.field(converter=_topic_names)
    owned_partitions: tuple[TopicPartition, ...] = attrs.field(
        default=(), converter=_topic_partitions
    )
    generation: int = -1
    rack: str | None = None
    user_data: bytes = b""
    group_instance_id: str | None = None


@attrs.frozen
class MemberAssignment:
    """The partitions one member is given, and opaque user data for it."""

    partitions: tuple[TopicPartition, ...] = attrs.field(converter=_topic_partitions)
    user_data: bytes = b""


def group_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """``[(topic, [partition, ...])]`` sorted by topic then partition: the wire layout."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(partition)
    return [(topic, sorted(by_topic[topic])) for topic in sorted(by_topic)]
