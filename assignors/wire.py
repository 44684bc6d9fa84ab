"""Between the consumer embedded protocol (Subscription/Assignment bytes) and assignor values."""

from __future__ import annotations

from collections.abc import Iterable

from assignors._types import MemberAssignment, MemberSubscription, TopicPartition, group_by_topic
from groupkit.protocol.consumer import Assignment, Subscription


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


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> MemberSubscription:
    """A member's JoinGroup metadata bytes as the assignor input."""
    sub = Subscription.decode(data)
    return MemberSubscription(
        topics=sub.topics,
        owned_partitions=[
            TopicPartition(topic, p) for topic, partitions in sub.owned_partitions for p in partitions
        ],
        generation=sub.generation_id,
        rack=sub.rack_id,
        user_data=sub.user_data or b"",
        group_instance_id=group_instance_id,
    )


def encode_assignment(assignment: MemberAssignment, version: int = 3) -> bytes:
    """Consumer Assignment bytes for SyncGroup; always a real assignment, even when empty."""
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
