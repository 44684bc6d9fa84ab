"""A GroupConsumer subscribed to a topic pattern (``pattern = "..."``), on both group protocols:
it processes every record of the topics the pattern matches as a whole, including a topic
created while it runs, and none of the others.

Classic protocol on the local broker (Tansu): the worker matches the pattern itself against
every topic's name, now and every ``metadata_max_age_ms`` (1 s here), as Java's
subscribe(Pattern) does. Consumer protocol (KIP-848) on confluent-kafka's mock cluster (Tansu
has no ConsumerGroupHeartbeat): the pattern goes to the broker as SubscribedTopicRegex and the
broker resolves it. The mock matches it anywhere in a name (POSIX regexec), where Kafka matches
whole names (docs/test-brokers.md), so the topics here are named so that both agree.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import confluent_kafka
import pytest

from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic, produce
from tests.support.group_workers import FAST_GROUP, InThread
from tests.support.mock_cluster import MockCluster

WAIT = 45.0


class Seen(GroupConsumer):
    """Notes the topic, partition and offset of every record it processes."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.changed = threading.Condition()
        self.records: set[tuple[str, int, int]] = set()

    def process(self, record: ConsumerRecord) -> None:
        with self.changed:
            self.records.add((record.topic, record.partition, record.offset))
            self.changed.notify_all()

    def wait_for(self, wanted: set[tuple[str, int, int]], what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: wanted <= self.records, WAIT):
                missing = sorted(wanted - self.records)[:5]
                raise AssertionError(f"waited {WAIT:.0f} s for {what}; missing e.g. {missing}")


def _tagged(topic: str, placed: set[tuple[int, int]]) -> set[tuple[str, int, int]]:
    return {(topic, p, o) for p, o in placed}


@pytest.mark.broker
def test_a_classic_pattern_worker_reads_the_matching_topics_and_one_created_later(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, group, stem = kafka_broker.bootstrap_servers, unique_name("g"), unique_name("p")
    matching, later = f"{stem}-orders", f"{stem}-refunds"
    others = [stem, f"x{stem}-orders", f"{stem}-orders_x"]  # no whole-name match
    create_topic(bootstrap, matching, 2)
    for name in others:
        create_topic(bootstrap, name, 1)
    wanted = _tagged(matching, produce(bootstrap, matching, range(40), 2))
    for name in others:
        produce(bootstrap, name, range(5), 1)
    worker = Seen(bootstrap_servers=bootstrap, group_id=group, pattern=re.escape(stem) + "-.*s",
                  metadata_max_age_ms=1_000, **{**FAST_GROUP, "auto_offset_reset": "earliest"})
    running = InThread(worker)
    try:
        worker.wait_for(wanted, "the matching topic's records")
        create_topic(bootstrap, later, 1)
        wanted |= _tagged(later, produce(bootstrap, later, range(10), 1))
        worker.wait_for(wanted, "the records of the topic created later")
    finally:
        summary = running.stop(WAIT)
    assert {t for t, _, _ in worker.records} == {matching, later}
    assert summary.records_processed == len(wanted)


def _mock_produce(bootstrap: str, topic: str, count: int, partitions: int
                  ) -> set[tuple[str, int, int]]:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    placed: list[tuple[str, int, int]] = []

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        placed.append((topic, msg.partition(), msg.offset()))

    for i in range(count):
        producer.produce(topic, b"v%d" % i, partition=i % partitions, on_delivery=delivered)
    assert producer.flush(WAIT) == 0
    return set(placed)


def test_a_consumer_protocol_pattern_worker_has_the_broker_resolve_it() -> None:
    with MockCluster(session_timeout_ms=4_000, heartbeat_interval_ms=500) as mock:
        bootstrap = mock.bootstrap_servers
        mock.create_topic("orders-eu", 2)
        mock.create_topic("refunds", 1)
        wanted = _mock_produce(bootstrap, "orders-eu", 40, 2)
        _mock_produce(bootstrap, "refunds", 5, 1)
        worker = Seen(bootstrap_servers=bootstrap, group_id="pattern-kip848",
                      group_protocol="consumer", pattern="orders-.*",
                      auto_offset_reset="earliest")
        running = InThread(worker)
        try:
            worker.wait_for(wanted, "the matching topic's records")
            mock.create_topic("orders-us", 1)
            wanted |= _mock_produce(bootstrap, "orders-us", 10, 1)
            worker.wait_for(wanted, "the records of the topic created later")
        finally:
            summary = running.stop(WAIT)
    assert {t for t, _, _ in worker.records} == {"orders-eu", "orders-us"}
    assert summary.records_processed == len(wanted)
