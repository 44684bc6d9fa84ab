"""The values :class:`groupkit.admin.Admin` returns: topics, groups, members and offsets."""

from __future__ import annotations

import uuid
from typing import TypeVar

import attrs

from assignors import TopicPartition
from groupkit.errors import CorruptFrame
from groupkit.protocol.consumer import Assignment, Subscription
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupDescribeAssignment,
    ConsumerGroupDescribeMember,
)
from groupkit.protocol.messages.describe_groups import DescribeGroupsResponseMember
from groupkit.protocol.messages.share_group import (
    ShareGroupDescribeAssignment,
    ShareGroupDescribeMember,
)

#: The protocol type of groups whose member metadata is the consumer embedded protocol.
CONSUMER_PROTOCOL_TYPE = "consumer"
#: The protocol type a share group (KIP-932) is described with.
SHARE_PROTOCOL_TYPE = "share"


@attrs.frozen
class CreatedTopic:
    """A topic ``create_topics`` made (partition count and replication as the broker set them)."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int


@attrs.frozen
class GroupListing:
    """One group a broker coordinates. ``state`` is None from brokers older than ListGroups v4."""

    group_id: str
    protocol_type: str
    state: str | None = None
    #: "classic", "consumer", "share" or "streams" (ListGroups v5+, Kafka 4.0+); else None.
    group_type: str | None = None


@attrs.frozen
class MemberDescription:
    """One member of a group, with its subscription and assignment decoded when they can be.

    For a "consumer" group ``subscription``/``assignment`` hold the decoded values; for other
    protocol types, or bytes that do not decode, they are None and ``metadata``/
    ``assignment_bytes`` keep the raw bytes.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    subscription: Subscription | None
    assignment: tuple[TopicPartition, ...] | None
    metadata: bytes = attrs.field(repr=False)
    assignment_bytes: bytes = attrs.field(repr=False)
    #: A consumer-protocol (KIP-848) member's epoch, the assignment the coordinator is moving
    #: it to, and the topic pattern it subscribed with (None for a classic group's members).
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartition, ...] | None = None
    subscribed_pattern: str | None = None

    @classmethod
    def from_consumer_group(cls, member: ConsumerGroupDescribeMember) -> MemberDescription:
        """One member of a consumer-protocol group as ConsumerGroupDescribe gives it: topics
        by name (the answer carries both ids and names), nothing encoded."""
        return cls(member.member_id, member.instance_id, member.client_id, member.client_host,
                   Subscription(topics=list(member.subscribed_topic_names),
                                rack_id=member.rack_id),
                   _named(member.assignment), b"", b"", member.member_epoch,
                   _named(member.target_assignment), member.subscribed_topic_regex or None)

    @classmethod
    def from_share_group(cls, member: ShareGroupDescribeMember) -> MemberDescription:
        """One member of a share group as ShareGroupDescribe gives it (topics by name)."""
        return cls(member.member_id, None, member.client_id, member.client_host,
                   Subscription(topics=list(member.subscribed_topic_names),
                                rack_id=member.rack_id),
                   _named(member.assignment), b"", b"", member.member_epoch)

    @classmethod
    def from_wire(cls, member: DescribeGroupsResponseMember,
                  protocol_type: str) -> MemberDescription:
        """Decode one DescribeGroups member; undecodable bytes become None, never an error."""
        subscription: Subscription | None = None
        assignment: tuple[TopicPartition, ...] | None = None
        if protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscription = _decode_or_none(Subscription, member.member_metadata)
            decoded = _decode_or_none(Assignment, member.member_assignment)
            if decoded is not None:
                assignment = tuple(TopicPartition(t, p) for t, parts in decoded.partitions
                                   for p in parts)
        return cls(member.member_id, member.group_instance_id, member.client_id,
                   member.client_host, subscription, assignment, member.member_metadata,
                   member.member_assignment)


_Embedded = TypeVar("_Embedded", Subscription, Assignment)


def _named(assignment: ConsumerGroupDescribeAssignment | ShareGroupDescribeAssignment
           ) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(tp.topic_name, p) for tp in assignment.topic_partitions
                        for p in tp.partitions))


def _decode_or_none(kind: type[_Embedded], data: bytes) -> _Embedded | None:
    if not data:
        return None
    try:
        return kind.decode(data)
    except CorruptFrame:
        return None


@attrs.frozen
class Node:
    """A broker as a group description names its coordinator (Java's ``Node``)."""

    node_id: int
    host: str
    port: int


@attrs.frozen
class GroupDescription:
    """A group's state, protocol and members, as its coordinator describes it (``coordinator``:
    the broker that answered, None if metadata does not list it)."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: Node | None = None
    #: A consumer-protocol (KIP-848) group's epoch (None for a classic group); its
    #: ``protocol_type`` is "consumer" and ``protocol`` the server-side assignor.
    group_epoch: int | None = None


@attrs.frozen
class ListedOffset:
    """A partition's offset for a ListOffsets spec ("earliest", "latest" or a timestamp)."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1

