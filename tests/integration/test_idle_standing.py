"""An idle consumer's long poll stands on its connection (``connection.Standing``) against the
local broker: the connection sends the unchanged Fetch again by itself while the answer stays
the same, and still records produced meanwhile, a seek and a hook's count of every round trip
behave as without it (tests/runtime/test_fetcher_standing.py shows every change ending it)."""

from __future__ import annotations

from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.hooks import Event, FetchCompleted
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic, produce
from tests.support.waits import wait_for


def standing(consumer: Consumer) -> Any:
    """The live standing repeat of ``consumer``'s long poll, once there is one (bounded)."""
    found: list[Any] = []

    def live() -> bool:
        found[:] = [s for s in consumer._fetcher._standing.values() if s.live]
        return bool(found)

    wait_for(live, 20, "the idle Fetch to stand on its connection")
    return found[0]


def poll_until(consumer: Consumer, count: int) -> list[int]:
    got: list[Any] = []
    wait_for(lambda: len(got) >= count, 20, f"{count} record(s)",
             step=lambda: got.extend(consumer.poll(0.1)))
    return [r.offset for r in got]


@pytest.fixture
def topic(kafka_broker: LocalBroker, unique_name: Any) -> str:  # noqa: F811
    name = unique_name("standing")
    make_topic(kafka_broker.bootstrap_servers, name, 1, 0)
    return name


def test_records_and_a_seek_reach_a_consumer_whose_fetch_stands(
        kafka_broker: LocalBroker, topic: str) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    tp = TopicPartition(topic, 0)
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        fetch_max_wait_ms=100)
    try:
        consumer.assign([tp])
        first = standing(consumer)
        produce(bootstrap, topic, [1])
        assert poll_until(consumer, 1) == [0]
        assert first not in consumer._fetcher._standing.values()  # delivered: over
        second = standing(consumer)
        assert second is not first
        consumer.seek(tp, 0)
        assert not second.live
        assert poll_until(consumer, 1) == [0]
    finally:
        consumer.close(5)


def test_a_hook_hears_of_every_round_trip_of_a_standing_fetch(
        kafka_broker: LocalBroker, topic: str) -> None:  # noqa: F811
    told: list[Event] = []
    consumer = Consumer(bootstrap_servers=kafka_broker.bootstrap_servers,
                        auto_offset_reset="earliest", fetch_max_wait_ms=100,
                        hooks=[told.append])
    try:
        consumer.assign([TopicPartition(topic, 0)])
        repeat = standing(consumer)
        before = sum(1 for e in told if isinstance(e, FetchCompleted))
        # About ten long polls a second, each told although no thread of the fetcher's wakes.
        wait_for(lambda: sum(1 for e in told if isinstance(e, FetchCompleted)) >= before + 10,
                 20, "ten more round trips told")
        assert repeat.live and repeat in consumer._fetcher._standing.values()
        fetches = [e for e in told if isinstance(e, FetchCompleted)][before:]
        assert all(e.records == 0 and e.partitions == 1 and e.latency_s >= 0 for e in fetches)
    finally:
        consumer.close(5)
