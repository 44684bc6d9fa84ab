"""A consumer far behind holds its backlog raw: records are built only as poll() hands them
over, so memory is bounded by the fetch settings and max_poll_records, not by the backlog."""

from __future__ import annotations

import sys

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.runtime.fetched import ConsumerRecord
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic, write_batches
from tests.support.waits import wait_for

BATCHES, PER_BATCH = 40, 200


def live_records() -> int:
    """Grows by one with each ConsumerRecord alive (each instance holds its class)."""
    return sys.getrefcount(ConsumerRecord)


def test_a_backlog_is_decoded_only_as_poll_hands_it_over(kafka_broker: LocalBroker,  # noqa: F811
                                                          unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("backlog")
    create_topic(bootstrap, topic, 1)
    total = BATCHES * PER_BATCH
    assert write_batches(bootstrap, topic, {0: [PER_BATCH] * BATCHES}, b"v" * 100) == {0: total}
    tp = TopicPartition(topic, 0)
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        enable_auto_commit=False, max_poll_records=10)
    try:
        consumer.assign([tp])
        before = live_records()
        got: list[ConsumerRecord] = []
        wait_for(lambda: got, 20, "the first records", step=lambda: got.extend(consumer.poll(0.2)))
        assert len(got) == 10
        # The answer holds about 880 KB of the backlog (the 1 MiB max_partition_fetch_bytes);
        # decoded whole it would be thousands of records. Only the batch the ten came from is.
        assert live_records() - before <= PER_BATCH + 10
        wait_for(lambda: len(got) >= total, 60, f"{total} records",
                 step=lambda: got.extend(consumer.poll(0.2)))
        assert [r.offset for r in got] == list(range(total))
        assert consumer.position(tp) == total
    finally:
        consumer.close(10)
