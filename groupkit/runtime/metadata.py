"""The cluster metadata cache as a value: brokers, topics, partition leaders, topic ids.

Built from a MetadataResponse (``ClusterMetadata.from_response``) and combined with later,
partial answers (``updated``), so it can be tested without a network. It never changes in
place: a refresh swaps the whole value, and readers on other threads always see one answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import attrs

from groupkit.errors import ErrorCode
from groupkit.protocol.messages.metadata import MetadataResponse
from groupkit.protocol.primitives import NULL_UUID


@attrs.frozen
class BrokerInfo:
    """One broker as metadata names it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen
class PartitionInfo:
    """One partition: its leader (-1 when it has none) and replicas."""

    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error_code: int = 0


@attrs.frozen
class TopicInfo:
    """One topic and its partitions, indexed by partition number."""

    name: str
    partitions: Mapping[int, PartitionInfo]
    topic_id: uuid.UUID = NULL_UUID
    is_internal: bool = False

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def available(self) -> tuple[int, ...]:
        """Partitions that have a leader now, in order."""
        return tuple(sorted(p for p, info in self.partitions.items() if info.leader >= 0))


@attrs.frozen
class ClusterMetadata:
    """What the cluster looked like at one Metadata answer (plus earlier answers it extends).

    ``topic_errors`` holds the error code of each topic the last answer refused (e.g.
    UNKNOWN_TOPIC_OR_PARTITION); such a topic is absent from ``topics``.
    """

    brokers: Mapping[int, BrokerInfo] = attrs.field(factory=dict)
    topics: Mapping[str, TopicInfo] = attrs.field(factory=dict)
    topic_errors: Mapping[str, int] = attrs.field(factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None

    @classmethod
    def from_response(cls, response: MetadataResponse) -> ClusterMetadata:
        """The metadata one response describes."""
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                   for b in response.brokers}
        topics: dict[str, TopicInfo] = {}
        errors: dict[str, int] = {}
        for t in response.topics:
            if t.name is None:
                continue
            if t.error_code and not t.partitions:
                errors[t.name] = t.error_code
                continue
            partitions = {
                p.partition_index: PartitionInfo(
                    p.partition_index, p.leader_id if p.error_code != ErrorCode.LEADER_NOT_AVAILABLE
                    else -1, p.leader_epoch, tuple(p.replica_nodes), tuple(p.isr_nodes),
                    p.error_code)
                for p in t.partitions}
            topics[t.name] = TopicInfo(t.name, partitions, t.topic_id, t.is_internal)
        return cls(brokers, topics, errors, response.controller_id, response.cluster_id)

    def updated(self, newer: ClusterMetadata, asked: Iterable[str] | None) -> ClusterMetadata:
        """This metadata with a newer answer applied.

        ``asked`` is the topics the newer answer was asked about (None: all topics). Topics it
        was not asked about keep their old entry; asked topics take the new one or vanish.
        """
        if asked is None:
            return newer
        asked = set(asked)
        topics = {n: t for n, t in self.topics.items() if n not in asked}
        topics.update(newer.topics)
        errors = {n: c for n, c in self.topic_errors.items() if n not in asked}
        errors.update(newer.topic_errors)
        return ClusterMetadata(newer.brokers, topics, errors, newer.controller_id,
                               newer.cluster_id)

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def leader_for(self, topic: str, partition: int) -> int | None:
        """The leader's node id, or None when the partition or its leader is unknown."""
        info = self.topics.get(topic)
        part = info.partitions.get(partition) if info is not None else None
        if part is None or part.leader < 0:
            return None
        return part.leader

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        return info.partition_count if info is not None else None

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.brokers.get(node_id)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with ``topic_id`` (Fetch v13+ names topics by id)."""
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info.name
        return None
