"""Between the consumer embedded protocol (Subscription/Assignment bytes) and assignor values.

A group leader decodes every member's Subscription and encodes every member's Assignment in each
rebalance: for 2,000 members on a million partitions, 2,000 lists of every topic name, a million
owned partitions and a million assigned ones. Where the assignors' C loops are active
(``sticky_loops.active``; ``GROUPKIT_NO_NATIVE=1`` switches both off) both run in C
(``assignors._native``, csrc/assignors/wire.c), with the Python path here as their twin: the
same values from the same bytes and the same bytes from the same values
(tests/assignors/test_assignor_wire_native.py runs both). Malformed bytes, and values only the
Python path handles, go to the Python path, so the errors are its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from assignors import sticky_loops
from assignors._types import MemberAssignment, MemberSubscription, TopicPartition, group_by_topic
from groupkit.protocol.consumer import Assignment, Subscription

#: A Subscription as (topics, user_data, owned partitions, generation, rack).
SubscriptionParts = tuple[tuple[str, ...], bytes | None, tuple[TopicPartition, ...], int, str | None]


def _codec() -> ModuleType | None:
    """The C codec when the C loops are the active ones."""
    return sticky_loops.MODULE if sticky_loops.active is sticky_loops.NATIVE else None


def encode_subscription(
    topics: Iterable[str],
    owned_partitions: Iterable[TopicPartition],
    generation: int,
    rack: str | None,
    user_data: bytes | None,
) -> bytes:
    """Consumer Subscription v3 bytes (readers of older versions read the prefix they know)."""
    return Subscription(
        topics=sorted(set(topics)),
        user_data=user_data,
        owned_partitions=group_by_topic(owned_partitions),
        generation_id=generation,
        rack_id=rack,
    ).encode(version=3)


def read_subscription(data: bytes) -> SubscriptionParts:
    """Subscription bytes as ``SubscriptionParts``, in Python (the twin of the C reader's
    ``read``); raises CorruptFrame on malformed bytes."""
    sub = Subscription.decode(data)
    owned = tuple([TopicPartition(t, p) for t, partitions in sub.owned_partitions for p in partitions])
    return tuple(sub.topics), sub.user_data, owned, sub.generation_id, sub.rack_id


class SubscriptionDecoder:
    """Decodes the Subscriptions of one rebalance's members.

    In C (when active) members sending the same topic list share one tuple of it and each
    topic name is made once; ``native`` False asks for the Python path whatever is active.
    """

    def __init__(self, native: bool = True) -> None:
        codec = _codec() if native else None
        self._reader = None if codec is None else codec.SubscriptionReader(TopicPartition)

    def decode(self, data: bytes, group_instance_id: str | None = None) -> MemberSubscription:
        """A member's JoinGroup metadata bytes as the assignor input."""
        parts = None if self._reader is None else self._reader.read(data)
        topics, user_data, owned, generation, rack = read_subscription(data) if parts is None else parts
        return MemberSubscription(
            topics=topics,
            owned_partitions=owned,
            generation=generation,
            rack=rack,
            user_data=user_data or b"",
            group_instance_id=group_instance_id,
        )


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> MemberSubscription:
    """A member's JoinGroup metadata bytes as the assignor input."""
    return SubscriptionDecoder().decode(data, group_instance_id)


def encode_assignment(assignment: MemberAssignment, version: int = 3) -> bytes:
    """Consumer Assignment bytes for SyncGroup; always a real assignment, even when empty.

    Partitions go grouped by topic, topics in name order, ids in order, as ``group_by_topic``
    lays them out.
    """
    codec = _codec()
    if codec is not None:
        data = codec.encode_assignment(assignment.partitions, assignment.user_data, version)
        if data is not None:
            return data
    return Assignment(
        partitions=group_by_topic(assignment.partitions),
        user_data=assignment.user_data or None,
    ).encode(version=version)


def decode_assignment(data: bytes) -> MemberAssignment:
    """The assignment a member received in SyncGroup."""
    received = Assignment.decode(data)
    return MemberAssignment(
        [TopicPartition(topic, p) for topic, partitions in received.partitions for p in partitions],
        received.user_data or b"",
    )
