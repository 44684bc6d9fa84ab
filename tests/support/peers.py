"""Group members run by the peer clients (kafka-python, aiokafka, confluent-kafka), one thread each.

Each member subscribes to the given topics with one partition assignment strategy, polls until
``stop()``, then closes (which sends LeaveGroup). Timeouts are small so a group forms in seconds.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500

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


class PeerMember(threading.Thread):
    """One member of ``group`` run by a peer client; ``error`` holds what ended it early."""

    client = ""

    def __init__(self, bootstrap: str, group: str, topics: list[str], strategy: str,
                 client_id: str) -> None:
        super().__init__(daemon=True, name=client_id)
        if strategy not in STRATEGIES[self.client]:
            raise ValueError(f"{self.client} has no {strategy!r} strategy; "
                             f"pick one of {STRATEGIES[self.client]}")
        self.bootstrap, self.group, self.topics = bootstrap, group, topics
        self.strategy, self.client_id = strategy, client_id
        self.error: BaseException | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def consume(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 20.0) -> None:
        """Ask the member to leave and close; raise what it failed with, or if it hangs."""
        self.stopping.set()
        self.join(timeout)
        if self.is_alive():
            raise RuntimeError(f"{self.name} did not close within {timeout} s")
        if self.error is not None:
            raise RuntimeError(f"{self.name} failed") from self.error


class KafkaPythonMember(PeerMember):
    client = "kafka-python"

    def consume(self) -> None:
        import kafka
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

        assignor: Any = {"range": RangePartitionAssignor,
                         "roundrobin": RoundRobinPartitionAssignor,
                         "sticky": StickyPartitionAssignor,
                         "cooperative-sticky": CooperativeStickyAssignor}[self.strategy]
        consumer = kafka.KafkaConsumer(
            *self.topics, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.client_id, partition_assignment_strategy=[assignor],
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            enable_auto_commit=False)
        try:
            while not self.stopping.is_set():
                consumer.poll(timeout_ms=100)
        finally:
            consumer.close()


class AiokafkaMember(PeerMember):
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

        base: Any = {"range": RangePartitionAssignor,
                     "roundrobin": RoundRobinPartitionAssignor,
                     "sticky": StickyPartitionAssignor}[self.strategy]
        # aiokafka's assignors keep their state (the sticky one its last assignment) on the
        # class, so members sharing this process get a subclass each, as if in their own.
        assignor = type(base.__name__, (base,), {})
        consumer = aiokafka.AIOKafkaConsumer(
            *self.topics, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.client_id, partition_assignment_strategy=(assignor,),
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            enable_auto_commit=False)
        await consumer.start()
        try:
            while not self.stopping.is_set():
                await consumer.getmany(timeout_ms=100)
        finally:
            await consumer.stop()


class ConfluentMember(PeerMember):
    client = "confluent-kafka"

    def consume(self) -> None:
        import confluent_kafka

        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "client.id": self.client_id, "partition.assignment.strategy": self.strategy,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "enable.auto.commit": False})
        try:
            consumer.subscribe(self.topics)
            while not self.stopping.is_set():
                consumer.poll(0.1)
        finally:
            consumer.close()


MEMBER_TYPES: dict[str, type[PeerMember]] = {
    cls.client: cls for cls in (KafkaPythonMember, AiokafkaMember, ConfluentMember)}


def commit_as_peer(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` with confluent-kafka, outside any group generation."""
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentTP

    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.commit(offsets=[ConfluentTP(t, p, o) for (t, p), o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed_by_peer(bootstrap: str, group: str, topic: str, partitions: int
                      ) -> dict[int, int | None]:
    """The group's committed offsets as kafka-python reads them (None: no commit)."""
    import kafka

    peer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                               enable_auto_commit=False)
    try:
        return {p: peer.committed(kafka.TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        peer.close()
