"""What a consumer-protocol member puts in each ConsumerGroupHeartbeat: values, not decisions.

``Subscription`` is what the application subscribed to (topic names, or one regular expression
the broker resolves). ``LocalAssignment`` is an assignment by topic id with a local epoch that
moves whenever it changes, so two equal partition sets received at different times still count
as two assignments (Java's ``AbstractMembershipManager.LocalAssignment``). ``SentFields``
remembers what the last heartbeat carried, so the next one sends only what changed, and
everything after a join or a failed heartbeat (Java's ``HeartbeatState.SentFields``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import attrs

from groupkit.group.config import GroupConfig
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.schema import Response

TopicIdPartitions = Mapping[uuid.UUID, frozenset[int]]


@attrs.frozen
class Subscription:
    """Topic names, or one regular expression (RE2/J syntax, resolved by the broker)."""

    topics: frozenset[str] = frozenset()
    pattern: str | None = None


@attrs.define
class SubscriptionHolder:
    """The subscription the application set last; read by the member's thread at each heartbeat.

    One attribute assignment replaces it, so the application thread may set it while the
    member's thread reads it (the classic ConsumerProtocol's topics are shared the same way).
    """

    current: Subscription = attrs.field(factory=Subscription)

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None) -> None:
        """Subscribe to ``topics``, or to the topics matching ``pattern``."""
        self.current = Subscription(frozenset(topics), pattern)


@attrs.frozen
class LocalAssignment:
    """Partitions by topic id, and the local epoch of this assignment (-1: none at all)."""

    local_epoch: int
    partitions: TopicIdPartitions = attrs.field(factory=dict)

    def replaced_by(self, partitions: TopicIdPartitions) -> LocalAssignment | None:
        """The assignment ``partitions`` becomes, or None when it is this one's partitions."""
        if self.local_epoch != NO_ASSIGNMENT.local_epoch and partitions == self.partitions:
            return None
        return LocalAssignment(self.local_epoch + 1, dict(partitions))

    def wire(self) -> list[ConsumerGroupHeartbeatTopicPartitions]:
        """The partitions as a heartbeat's ``topic_partitions``, topics and partitions sorted."""
        return [ConsumerGroupHeartbeatTopicPartitions(topic_id=topic, partitions=sorted(parts))
                for topic, parts in sorted(self.partitions.items(), key=lambda kv: kv[0].bytes)
                if parts]


NO_ASSIGNMENT = LocalAssignment(-1)


def from_wire(topics: Iterable[ConsumerGroupHeartbeatTopicPartitions]) -> dict[
        uuid.UUID, frozenset[int]]:
    """A heartbeat answer's assignment by topic id (a topic listed twice: its partitions merge)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for tp in topics:
        out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return {topic: parts for topic, parts in out.items() if parts}


@attrs.define
class SentFields:
    """What the last heartbeat carried; ``reset`` makes the next one carry everything."""

    rebalance_timeout_ms: int = -1
    subscription: Subscription | None = None
    server_assignor: str | None = None
    assignment: LocalAssignment | None = None

    def reset(self) -> None:
        self.rebalance_timeout_ms = -1
        self.subscription = None
        self.server_assignor = None
        self.assignment = None

    def build(self, config: GroupConfig, member_id: str, epoch: int, joining: bool,
              subscription: Subscription, server_assignor: str | None,
              assignment: LocalAssignment) -> ConsumerGroupHeartbeatRequest:
        """The next heartbeat: identity always; a field only when ``joining`` or changed.

        The instance id goes with every heartbeat of a static member, the rack id with every
        full one (as Java's ``HeartbeatState.buildRequestData`` does).
        """
        timeout = config.rebalance_timeout_ms
        send_timeout = joining or self.rebalance_timeout_ms != timeout
        send_subscription = joining or self.subscription != subscription
        send_assignor = server_assignor is not None and (
            joining or self.server_assignor != server_assignor)
        send_assignment = joining or self.assignment != assignment
        self.rebalance_timeout_ms = timeout
        self.subscription = subscription
        self.server_assignor = server_assignor
        self.assignment = assignment
        names: list[str] | None = None
        regex: str | None = None
        if send_subscription:
            # Both fields go together: null means "unchanged" to the coordinator, so a names
            # subscription clears a pattern sent before with an empty one, and a pattern clears
            # the names with an empty list (librdkafka sends the pair the same way; Kafka keeps
            # "" as "no pattern").
            if subscription.pattern is not None:
                names, regex = [], subscription.pattern
            else:
                names, regex = sorted(subscription.topics), ""
        return ConsumerGroupHeartbeatRequest(
            group_id=config.group_id, member_id=member_id, member_epoch=epoch,
            instance_id=config.group_instance_id,
            rack_id=config.client_rack if joining else None,
            rebalance_timeout_ms=timeout if send_timeout else -1,
            subscribed_topic_names=names, subscribed_topic_regex=regex,
            server_assignor=server_assignor if send_assignor else None,
            topic_partitions=assignment.wire() if send_assignment else None)


def leave_request(config: GroupConfig, member_id: str, epoch: int) -> ConsumerGroupHeartbeatRequest:
    """The heartbeat that leaves the group with ``epoch`` (-1, or -2 for a static member)."""
    return ConsumerGroupHeartbeatRequest(group_id=config.group_id, member_id=member_id,
                                         member_epoch=epoch,
                                         instance_id=config.group_instance_id)


@attrs.frozen
class QuietAnswer:
    """Whether a heartbeat answer leaves a STABLE member as it is: no assignment (Kafka sends
    one only when it changed, or to a full heartbeat), the same member epoch, member id and
    interval. Such an answer may wait for the runtime's next wakeup (``Send.quiet_if``); a
    pure test of the answer, run on a connection's thread."""

    member_epoch: int
    member_id: str
    interval_s: float

    def __call__(self, response: Response) -> bool:
        return (isinstance(response, ConsumerGroupHeartbeatResponse)
                and response.assignment is None
                and response.member_epoch == self.member_epoch
                and max(0, response.heartbeat_interval_ms) / 1000 == self.interval_s
                and (not response.member_id or response.member_id == self.member_id))

