"""Runs kafka-python's assignors on the same input as ours, for side-by-side comparison."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from assignors import ClusterView, MemberSubscription, TopicPartition, member_order
from tests.support.peers import kafka_python_assignor


class PeerCluster:
    """The two ClusterMetadata methods kafka-python's assignors call."""

    def __init__(self, cluster: ClusterView) -> None:
        self._counts = cluster.partitions

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic, 0)
        return set(range(count)) if count else None


def peer_assign(
    name: str, cluster: ClusterView, members: Mapping[str, MemberSubscription]
) -> dict[str, list[TopicPartition]]:
    """kafka-python's result as ``{member_id: sorted partitions}``.

    Members are passed static first: kafka-python groups static and dynamic members with
    ``itertools.groupby``, which only splits them correctly when they arrive that way.
    """
    peer_members = [
        SimpleNamespace(
            member_id=member_id,
            group_instance_id=members[member_id].group_instance_id,
            metadata=ConsumerProtocolSubscription(
                version=0, topics=list(members[member_id].topics), user_data=b""
            ),
        )
        for member_id in member_order(members)
    ]
    result = kafka_python_assignor(name)().assign(PeerCluster(cluster), peer_members)
    return {
        member_id: sorted(TopicPartition(tp.topic, tp.partition) for tp in a.partitions())
        for member_id, a in result.items()
    }
