"""The default assignors ["cooperative-sticky", "range"], both ways round, on the real broker:
groupkit members alone rebalance incrementally; a groupkit member joins a group of kafka-python
or confluent-kafka members left at their own defaults (range first) by the shared protocol."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from assignors import RebalanceProtocol, TopicPartition
from groupkit.consumer import Consumer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic
from tests.support.peers import FAST_GROUP
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker


class Held:
    """A listener keeping what its consumer holds and every revocation it was told of."""

    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        if partitions:
            self.revoked.append(set(partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        raise AssertionError(f"partitions lost in a plain rebalance: {partitions}")


def test_an_all_groupkit_group_rebalances_incrementally_by_default(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("coop"), unique_name("g")
    make_topic(bootstrap, topic, 4, 40)
    every = {TopicPartition(topic, p) for p in range(4)}
    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": group,
                                "auto_offset_reset": "earliest", **FAST_GROUP}
    first, second = Consumer(**settings), Consumer(**settings)
    one, two = Held(), Held()
    try:
        first.subscribe([topic], listener=one)
        wait_for(lambda: first.assignment() == every, 45, "the first member to hold all",
                 lambda: first.poll(0.2))
        assert first.rebalance_protocol is RebalanceProtocol.COOPERATIVE
        second.subscribe([topic], listener=two)

        def both_poll() -> None:
            first.poll(0.1)
            second.poll(0.1)
        wait_for(lambda: first.assignment() | second.assignment() == every
                 and not first.assignment() & second.assignment()
                 and bool(second.assignment()), 60, "the partitions shared out", both_poll)
        revoked = list(one.revoked)
        taken = second.assignment()
    finally:
        second.close(10)
        first.close(10)
    # Eager would have revoked all four from the first member; cooperative only what moved.
    assert revoked and set().union(*revoked) == taken and taken < every, revoked


class Member(threading.Thread):
    """One member polling in its own thread at its client's default assignors; keeps what it
    got and what it holds."""

    kind = ""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True, name=name)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.values: list[bytes] = []
        self.owned: set[TopicPartition] = set()
        self.error: BaseException | None = None
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def consume(self) -> None:
        raise NotImplementedError

    def got(self, values: list[bytes], owned: set[TopicPartition]) -> None:
        with self.lock:
            self.values.extend(values)
            self.owned = owned

    def snapshot(self) -> tuple[list[bytes], set[TopicPartition]]:
        with self.lock:
            return list(self.values), set(self.owned)

    def finish(self, timeout: float = 15.0) -> None:
        self.stop_event.set()
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not stop within {timeout} s"
        if self.error is not None:
            raise self.error


def owned_exactly_once(members: list[Member], partitions: set[TopicPartition]) -> bool:
    held = [tp for m in members for tp in m.snapshot()[1]]
    return all(m.snapshot()[1] for m in members) and len(held) == len(set(held)) \
        and set(held) == partitions


def consumed(members: list[Member]) -> set[bytes]:
    return {v for m in members for v in m.snapshot()[0]}


class KafkaPythonDefault(Member):
    """A kafka-python member with its default assignors (range, roundrobin)."""

    kind = "kafka-python"

    def consume(self) -> None:
        import kafka

        consumer = kafka.KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap,
                                       group_id=self.group, auto_offset_reset="earliest",
                                       **FAST_GROUP)
        try:
            while not self.stop_event.is_set():
                batches = consumer.poll(timeout_ms=200)
                self.got([r.value for rs in batches.values() for r in rs],
                         {TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment()})
        finally:
            consumer.close()


class ConfluentDefault(Member):
    """A confluent-kafka member with librdkafka's default assignors (range, roundrobin)."""

    kind = "confluent-kafka"

    def consume(self) -> None:
        import confluent_kafka

        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": FAST_GROUP["session_timeout_ms"],
            "heartbeat.interval.ms": FAST_GROUP["heartbeat_interval_ms"]})
        try:
            consumer.subscribe([self.topic])
            while not self.stop_event.is_set():
                messages = consumer.consume(500, 0.2)
                self.got([m.value() for m in messages if m.error() is None],
                         {TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment()})
        finally:
            consumer.close()


class GroupkitDefault(Member):
    """A groupkit member with the default assignors."""

    kind = "groupkit"

    def consume(self) -> None:
        consumer = Consumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                            auto_offset_reset="earliest", **FAST_GROUP)
        try:
            consumer.subscribe([self.topic])
            while not self.stop_event.is_set():
                records = consumer.poll(0.2)
                self.got([r.value for r in records], consumer.assignment())
        finally:
            consumer.close(10)


@pytest.mark.parametrize("peer", [KafkaPythonDefault, ConfluentDefault])
def test_a_default_groupkit_member_joins_a_group_of_default_peers(
        kafka_broker: LocalBroker, unique_name, peer: type[Member]) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("mixed"), unique_name("g")
    produced = make_topic(bootstrap, topic, 4, 200)
    every = {TopicPartition(topic, p) for p in range(4)}
    first = peer(f"{peer.kind}-0", bootstrap, group, topic)
    members = [first, GroupkitDefault("groupkit-1", bootstrap, group, topic)]
    try:
        first.start()
        wait_for(lambda: first.snapshot()[1] == every, 45, f"{first.name} to own every partition")
        members[1].start()
        wait_for(lambda: owned_exactly_once(members, every) and consumed(members) >= produced,
                 60, "every partition owned once and every record consumed")
    finally:
        for member in members:
            member.finish()
    assert consumed(members) == produced
