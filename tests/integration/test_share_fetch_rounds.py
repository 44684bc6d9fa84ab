"""When a groupkit ShareConsumer fetches, on confluent-kafka's mock cluster: as Java's
KafkaShareConsumer (ShareConsumerImpl.collect), a ShareFetch goes out only from a poll that
finds nothing buffered, so no record is acquired while the application works on the ones it
has (the next fetch carries their acknowledgements).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from groupkit import ShareConsumer
from groupkit.hooks import ShareRecordsAcquired
from tests.support.mock_cluster import MockCluster
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("share-mock")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, share_auto_offset_reset="earliest",
                     share_heartbeat_interval_ms=500) as cluster:
        cluster.warm_producer()  # before any member: see tests/support/mock_cluster.py
        yield cluster


class _Acquired:
    """A hook keeping the offsets each ShareFetch answer acquired (on the fetcher thread)."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, event: object) -> None:
        if isinstance(event, ShareRecordsAcquired) and event.records:
            with self.lock:
                self.counts.append(event.records)


def test_nothing_is_acquired_while_the_application_holds_a_polls_records(
        mock: MockCluster) -> None:
    topic, group = f"rounds-{time.monotonic_ns()}", f"rounds-group-{time.monotonic_ns()}"
    mock.create_topic(topic, 1)
    acquired = _Acquired()
    consumer = ShareConsumer(bootstrap_servers=mock.bootstrap_servers, group_id=group,
                             max_poll_records=5, fetch_max_wait_ms=100, hooks=[acquired])
    try:
        consumer.subscribe([topic])
        wait_for(lambda: bool(consumer.assignment()), 20, "the partition assigned",
                 step=lambda: consumer.poll(0.05))
        mock.produce(topic, (b"v%d" % i for i in range(15)), partitions=1)
        polls: list[list[int]] = []
        wait_for(lambda: bool(polls and polls[-1]), 20, "the first records",
                 step=lambda: polls.append([r.offset for r in consumer.poll(0.1)]))
        assert polls[-1] == [0, 1, 2, 3, 4]
        wait_for(lambda: acquired.counts == [5], 5, "the first answer's hook")
        # The application holds records 0-4 and has not polled again: nothing more is
        # fetched meanwhile (before, the fetcher sent the next ShareFetch as soon as a poll
        # emptied its buffer, and records 5-9 were acquired within milliseconds).
        time.sleep(0.5)
        assert acquired.counts == [5]
        assert [r.offset for r in consumer.poll(10)] == [5, 6, 7, 8, 9]
        wait_for(lambda: acquired.counts == [5, 5], 5, "the second answer's hook")
        time.sleep(0.5)
        assert acquired.counts == [5, 5]
        assert [r.offset for r in consumer.poll(10)] == [10, 11, 12, 13, 14]
        consumer.commit_sync(10)
    finally:
        consumer.close()
