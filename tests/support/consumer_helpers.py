"""Shared pieces of the consumer tests: topics with records, bounded waits, member threads."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from assignors import (
    Assignor,
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    TopicPartition,
    lookup,
)
from groupkit.admin import Admin
from groupkit.consumer import Consumer
from groupkit.producer import Producer

#: Small timeouts so a group forms in seconds on Tansu (it holds JoinGroup ~session/2).
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}


def make_topic(bootstrap: str, topic: str, partitions: int, count: int) -> set[bytes]:
    """Create ``topic`` and produce ``count`` records (values b"0".."count-1") spread over it."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=partitions)
    produce(bootstrap, topic, range(count))
    return {str(i).encode() for i in range(count)}


def produce(bootstrap: str, topic: str, numbers: Any) -> None:
    with Producer(bootstrap_servers=bootstrap) as producer:
        for i in numbers:
            producer.send(topic, str(i).encode(), key=str(i).encode())
        producer.flush(30)


def wait_for(condition: Callable[[], bool], timeout: float, what: str,
             step: Callable[[], Any] | None = None) -> None:
    """Run ``step`` (or wait briefly) until ``condition()`` holds; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if step is not None:
            step()
        else:
            event.wait(0.05)


class CountingAssignor(Assignor):
    """A built-in assignor that tells its member how many members it assigned to."""

    def __init__(self, inner: Assignor, member: Member) -> None:
        self.inner, self.member = inner, member
        self.name = inner.name
        self.supported_protocols = inner.supported_protocols

    def assign(self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
               ) -> dict[str, MemberAssignment]:
        self.member.led_group_of(len(members))
        return self.inner.assign(cluster, members)


class Member(threading.Thread):
    """One group member polling in its own thread; records what it got and what it owns."""

    kind = ""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, strategy: str) -> None:
        super().__init__(daemon=True, name=name)
        self.bootstrap, self.group, self.topic, self.strategy = bootstrap, group, topic, strategy
        self.values: list[bytes] = []
        self.owned: set[TopicPartition] = set()
        self.led = 0
        self.error: BaseException | None = None
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by the test through ``error``
            self.error = exc

    def consume(self) -> None:
        raise NotImplementedError

    def led_group_of(self, members: int) -> None:
        """This member, as leader, ran the assignor for ``members`` members."""
        with self.lock:
            self.led = max(self.led, members)

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


class GroupkitMember(Member):
    kind = "groupkit"

    def consume(self) -> None:
        consumer = Consumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                            auto_offset_reset="earliest",
                            assignors=[CountingAssignor(lookup(self.strategy), self)],
                            **FAST_GROUP)
        try:
            consumer.subscribe([self.topic])
            while not self.stop_event.is_set():
                records = consumer.poll(0.2)
                self.got([r.value for r in records], consumer.assignment())
        finally:
            consumer.close(10)


class KafkaPythonMember(Member):
    kind = "kafka-python"

    def consume(self) -> None:
        import kafka
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        base = {"range": RangePartitionAssignor,
                "roundrobin": RoundRobinPartitionAssignor}[self.strategy]
        member = self

        class Counting(base):  # type: ignore[misc, valid-type]
            @classmethod
            def assign(cls, cluster: Any, members: Any) -> Any:
                member.led_group_of(len(members))
                return super().assign(cluster, members)

        assignor = Counting
        consumer = kafka.KafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            auto_offset_reset="earliest", partition_assignment_strategy=[assignor],
            **FAST_GROUP)
        try:
            while not self.stop_event.is_set():
                batches = consumer.poll(timeout_ms=200)
                values = [r.value for rs in batches.values() for r in rs]
                self.got(values, {TopicPartition(tp.topic, tp.partition)
                                  for tp in consumer.assignment()})
        finally:
            consumer.close()


class ConfluentMember(Member):
    kind = "confluent-kafka"

    def consume(self) -> None:
        import confluent_kafka

        # librdkafka says "I am elected leader for group "g" with N member(s)" (debug cgrp).
        member = self

        class LeaderLog(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                found = re.search(r"elected leader for group .* with (\d+) member",
                                  record.getMessage())
                if found:
                    member.led_group_of(int(found.group(1)))

        log = logging.getLogger(f"rdkafka.{self.name}")
        log.propagate = False
        log.setLevel(logging.DEBUG)
        log.addHandler(LeaderLog())
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "auto.offset.reset": "earliest", "partition.assignment.strategy": self.strategy,
            "session.timeout.ms": FAST_GROUP["session_timeout_ms"],
            "heartbeat.interval.ms": FAST_GROUP["heartbeat_interval_ms"], "debug": "cgrp"},
            logger=log)
        try:
            consumer.subscribe([self.topic])
            while not self.stop_event.is_set():
                messages = consumer.consume(500, 0.2)
                values = [m.value() for m in messages if m.error() is None]
                self.got(values, {TopicPartition(tp.topic, tp.partition)
                                  for tp in consumer.assignment()})
        finally:
            consumer.close()


def owned_exactly_once(members: list[Member], partitions: set[TopicPartition]) -> bool:
    """Every partition is held by exactly one member (and every member holds some)."""
    seen: list[TopicPartition] = []
    for member in members:
        _, owned = member.snapshot()
        if not owned:
            return False
        seen.extend(owned)
    return len(seen) == len(set(seen)) and set(seen) == partitions


def consumed(members: list[Member]) -> set[bytes]:
    return {v for m in members for v in m.snapshot()[0]}
