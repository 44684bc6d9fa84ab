"""The leader's assignor reads metadata fetched when the JoinGroup went out (no broker).

Tansu answers a follower's early SyncGroup only about a second after the leader's arrives, so
a leader that first fetches metadata after the join answer costs every member that second;
the live tests in tests/test_consumer.py run the same path against Tansu.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupkit.consumer import Consumer
from groupkit.errors import KafkaConnectionError
from groupkit.runtime.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo


class CountingCluster:
    """Answers refreshes with a 3-partition topic ``t``; the first may fail."""

    def __init__(self, fail_first: bool) -> None:
        self.refreshes = 0
        self.fail = fail_first
        self.metadata = ClusterMetadata(
            brokers={0: BrokerInfo(0, "h", 1)},
            topics={"t": TopicInfo("t", {p: PartitionInfo(p, leader=0) for p in range(3)})})

    def refresh(self, topics: object = ()) -> ClusterMetadata:
        self.refreshes += 1
        if self.fail:
            self.fail = False
            raise KafkaConnectionError("the broker is away")
        return self.metadata


@pytest.fixture
def consumer() -> Iterator[Consumer]:
    made = Consumer(bootstrap_servers="127.0.0.1:9", group_id="g")
    real = made._cluster
    yield made
    made._cluster = real
    made.close(1)


def test_the_assignor_uses_the_metadata_fetched_at_the_join(consumer: Consumer) -> None:
    cluster = CountingCluster(fail_first=False)
    consumer._cluster = cluster  # type: ignore[assignment]
    consumer._joining()
    assert consumer._cluster_view(frozenset({"t"})).partitions == {"t": 3}
    assert cluster.refreshes == 1
    # That metadata served one assignment; the next one fetches its own.
    assert consumer._cluster_view(frozenset({"t"})).partitions == {"t": 3}
    assert cluster.refreshes == 2


def test_a_failed_fetch_at_the_join_is_made_good_at_the_assignment(consumer: Consumer) -> None:
    cluster = CountingCluster(fail_first=True)
    consumer._cluster = cluster  # type: ignore[assignment]
    consumer._joining()
    assert consumer._cluster_view(frozenset({"t"})).partitions == {"t": 3}
    assert cluster.refreshes == 2
