"""Group members for the broker tests, one thread each: groupkit's Consumer and the peer clients
(kafka-python, aiokafka, confluent-kafka) behind one interface.

A member subscribes to its topics with one partition assignment strategy (None: its client's
default assignors) and polls until
``stop()``, which closes it (sending LeaveGroup) and raises whatever ended it early. While it
runs it keeps the values it received, the partitions it owns after its last poll and, as leader,
the largest group it ran the assignor for (``led``); given a ``board`` it also reports each
record and (confluent-kafka members, which the mixed cooperative test runs) each rebalance
there. Offsets start at the earliest record; commits are off unless ``auto_commit`` is asked
for. Timeouts are small so a group forms in seconds (Tansu holds JoinGroup for about half the
session timeout).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from assignors import (
    Assignor,
    ClusterView,
    MemberAssignment,
    MemberSubscription,
    TopicPartition,
    lookup,
)
from groupkit.config import ConsumerConfig
from groupkit.consumer import Consumer

if TYPE_CHECKING:
    from tests.support.group_workers import Board

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
#: The same small timeouts as groupkit settings.
FAST_GROUP = {"session_timeout_ms": SESSION_TIMEOUT_MS,
              "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS}

#: Strategy names each peer client offers, as the protocol names they put in JoinGroup.
STRATEGIES: dict[str, tuple[str, ...]] = {
    "kafka-python": ("range", "roundrobin", "sticky", "cooperative-sticky"),
    "aiokafka": ("range", "roundrobin", "sticky"),
    "confluent-kafka": ("range", "roundrobin", "cooperative-sticky"),
}


def client_version(client: str) -> str:
    """The installed version of a peer client (librdkafka's for confluent-kafka is appended)."""
    if client == "kafka-python":
        import kafka

        return str(kafka.__version__)
    if client == "aiokafka":
        import aiokafka

        return str(aiokafka.__version__)
    import confluent_kafka

    return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"


def kafka_python_assignor(strategy: str) -> Any:
    """kafka-python's assignor class for ``strategy``."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    return {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor,
            "cooperative-sticky": CooperativeStickyAssignor}[strategy]


class Member(threading.Thread):
    """One member of ``group``; ``error`` holds what ended it early."""

    client: ClassVar[str] = ""

    def __init__(self, bootstrap: str, group: str, topics: list[str], strategy: str | None,
                 client_id: str, *, auto_commit: bool = False, board: Board | None = None,
                 settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(daemon=True, name=client_id)
        offered = STRATEGIES.get(self.client)
        if offered is not None and strategy is not None and strategy not in offered:
            raise ValueError(f"{self.client} has no {strategy!r} strategy; pick one of {offered}")
        self.bootstrap, self.group, self.topics = bootstrap, group, topics
        self.strategy, self.client_id, self.auto_commit = strategy, client_id, auto_commit
        self.board = board
        #: More settings, in the client's own spelling: {"api_version": "2.3"} for groupkit,
        #: {"session.timeout.ms": 3000} for confluent-kafka (the other peers take none).
        self.settings = dict(settings or {})
        self.values: list[bytes | None] = []
        self.owned: set[TopicPartition] = set()
        self.led = 0
        self.error: BaseException | None = None
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def consume(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 20.0) -> None:
        """Ask the member to leave and close; raise what it failed with, or if it hangs. A member
        never started has nothing to stop."""
        if self.ident is None:
            return
        self.stopping.set()
        self.join(timeout)
        if self.is_alive():
            raise RuntimeError(f"{self.name} did not close within {timeout} s")
        if self.error is not None:
            raise RuntimeError(f"{self.name} failed") from self.error

    def led_group_of(self, members: int) -> None:
        """This member, as leader, ran the assignor for ``members`` members."""
        with self.lock:
            self.led = max(self.led, members)

    def got(self, records: Iterable[tuple[int, int, bytes | None]],
            owned: Iterable[tuple[str, int]]) -> None:
        """One poll's (partition, offset, value) records and the partitions owned after it."""
        records = list(records)
        with self.lock:
            self.values.extend(value for _, _, value in records)
            self.owned = {TopicPartition(topic, p) for topic, p in owned}
        if self.board is not None:
            for partition, offset, _ in records:
                self.board.record(self.name, partition, offset)

    def rebalanced(self, kind: str, partitions: Iterable[tuple[str, int]]) -> None:
        """Tell the board (if any) that partitions were "assigned", "revoked" or "lost"."""
        if self.board is not None:
            self.board.rebalance(self.name, kind, [p for _, p in partitions])

    def snapshot(self) -> tuple[list[bytes | None], set[TopicPartition]]:
        with self.lock:
            return list(self.values), set(self.owned)


class _CountingAssignor(Assignor):
    """A groupkit assignor that tells its member how many members it assigned to."""

    def __init__(self, inner: Assignor, member: Member) -> None:
        self.inner, self.member = inner, member
        self.name = inner.name
        self.supported_protocols = inner.supported_protocols

    def assign(self, cluster: ClusterView, members: Mapping[str, MemberSubscription]
               ) -> dict[str, MemberAssignment]:
        self.member.led_group_of(len(members))
        return self.inner.assign(cluster, members)


class GroupkitMember(Member):
    client = "groupkit"

    def consume(self) -> None:
        names = ([self.strategy] if self.strategy is not None
                 else list(attrs.fields(ConsumerConfig).assignors.default))
        consumer = Consumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                            client_id=self.client_id, auto_offset_reset="earliest",
                            enable_auto_commit=self.auto_commit,
                            assignors=[_CountingAssignor(lookup(n), self) for n in names],
                            **{**FAST_GROUP, **self.settings})
        try:
            consumer.subscribe(self.topics)
            while not self.stopping.is_set():
                records = consumer.poll(0.2)
                self.got(((r.partition, r.offset, r.value) for r in records),
                         consumer.assignment())
        finally:
            consumer.close(10)


class KafkaPythonMember(Member):
    client = "kafka-python"

    def consume(self) -> None:
        import kafka

        bases = ([kafka_python_assignor(self.strategy)] if self.strategy is not None
                 else kafka.KafkaConsumer.DEFAULT_CONFIG["partition_assignment_strategy"])
        member = self

        def counting(base: Any) -> Any:
            # kafka-python makes an instance of each assignor class and calls assign on it.
            class Counting(base):
                def assign(self, cluster: Any, members: Any) -> Any:
                    member.led_group_of(len(members))
                    return super().assign(cluster, members)
            return Counting

        consumer = kafka.KafkaConsumer(
            *self.topics, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.client_id,
            partition_assignment_strategy=[counting(base) for base in bases],
            auto_offset_reset="earliest", enable_auto_commit=self.auto_commit,
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)
        try:
            while not self.stopping.is_set():
                batches = consumer.poll(timeout_ms=200)
                self.got(((r.partition, r.offset, r.value) for rs in batches.values()
                          for r in rs), consumer.assignment())
        finally:
            consumer.close()


class AiokafkaMember(Member):
    client = "aiokafka"

    def consume(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        import aiokafka
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.coordinator.assignors.sticky.sticky_assignor import (
            StickyPartitionAssignor,
        )

        bases: Any = ([{"range": RangePartitionAssignor,
                        "roundrobin": RoundRobinPartitionAssignor,
                        "sticky": StickyPartitionAssignor}[self.strategy]]
                      if self.strategy is not None else inspect.signature(
                          aiokafka.AIOKafkaConsumer).parameters[
                              "partition_assignment_strategy"].default)
        member = self

        def counting(base: Any) -> Any:
            # aiokafka calls assign on the class and its assignors keep their state (the sticky
            # one its last assignment) on the class, so each member gets a subclass of its own,
            # as if it ran in its own process.
            class Counting(base):
                @classmethod
                def assign(cls, cluster: Any, members: Any) -> Any:
                    member.led_group_of(len(members))
                    return super().assign(cluster, members)
            return Counting

        consumer = aiokafka.AIOKafkaConsumer(
            *self.topics, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.client_id,
            partition_assignment_strategy=tuple(counting(base) for base in bases),
            auto_offset_reset="earliest", enable_auto_commit=self.auto_commit,
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)
        await consumer.start()
        try:
            while not self.stopping.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                self.got(((r.partition, r.offset, r.value) for rs in batches.values()
                          for r in rs), consumer.assignment())
        finally:
            await consumer.stop()


class ConfluentMember(Member):
    client = "confluent-kafka"

    def consume(self) -> None:
        import confluent_kafka

        member = self

        # librdkafka says "I am elected leader for group "g" with N member(s)" (debug cgrp).
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
        config = {
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "client.id": self.client_id, "auto.offset.reset": "earliest",
            "enable.auto.commit": self.auto_commit, "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "debug": "cgrp"}
        if self.strategy is not None:
            config["partition.assignment.strategy"] = self.strategy
        config.update(self.settings)
        consumer = confluent_kafka.Consumer(config, logger=log)

        def report(kind: str) -> Any:
            # confluent-kafka assigns (incrementally, when cooperative) after the callback.
            return lambda _consumer, tps: self.rebalanced(
                kind, [(tp.topic, tp.partition) for tp in tps])

        try:
            consumer.subscribe(self.topics, on_assign=report("assigned"),
                               on_revoke=report("revoked"), on_lost=report("lost"))
            while not self.stopping.is_set():
                messages = [m for m in consumer.consume(500, 0.2) if m.error() is None]
                self.got(((m.partition(), m.offset(), m.value()) for m in messages),
                         ((tp.topic, tp.partition) for tp in consumer.assignment()))
        finally:
            consumer.close()


MEMBER_TYPES: dict[str, type[Member]] = {
    cls.client: cls for cls in (GroupkitMember, KafkaPythonMember, AiokafkaMember,
                                ConfluentMember)}


def owned_exactly_once(members: list[Member], partitions: set[TopicPartition]) -> bool:
    """Every partition is held by exactly one member (and every member holds some)."""
    seen: list[TopicPartition] = []
    for member in members:
        _, owned = member.snapshot()
        if not owned:
            return False
        seen.extend(owned)
    return len(seen) == len(set(seen)) and set(seen) == partitions


def consumed(members: list[Member]) -> set[bytes | None]:
    return {v for m in members for v in m.snapshot()[0]}
