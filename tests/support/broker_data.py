"""What the broker tests put on and read back from the broker: topics, records and committed
offsets. Every helper takes the bootstrap address and opens (and closes) its own clients."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import kafka
from confluent_kafka import Consumer as ConfluentConsumer, TopicPartition as ConfluentTP

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.producer import Producer

WAIT = 30.0


def create_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    """Create each topic with its number of partitions."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        for topic, partitions in topics.items():
            admin.create_topics([topic], num_partitions=partitions)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    create_topics(bootstrap, {topic: partitions})


def produce(bootstrap: str, topic: str, numbers: Iterable[int],
            partitions: int | None = None) -> set[tuple[int, int]]:
    """Send ``str(i)`` as key and value for each number: to partition ``i % partitions`` when
    ``partitions`` is given, else where the key hashes. Returns each record's (partition,
    offset) as the producer was told."""
    with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        futures = [producer.send(topic, str(i).encode(), key=str(i).encode(),
                                 partition=None if partitions is None else i % partitions)
                   for i in numbers]
        producer.flush(WAIT)
        return {(m.partition, m.offset) for m in (f.result(WAIT) for f in futures)}


def make_topic(bootstrap: str, topic: str, partitions: int, count: int) -> set[bytes]:
    """Create ``topic`` and produce ``count`` records (values b"0".."count-1") spread over it;
    returns the values."""
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, range(count))
    return {str(i).encode() for i in range(count)}


def write_batches(bootstrap: str, topic: str, batches: Mapping[int, Sequence[int]],
                  value: bytes = b"r") -> dict[int, int]:
    """Write each partition's batches of ``value`` records, one flush (one record batch) each;
    returns each partition's log end (the offset after its last record as the producer was
    told, 0 where nothing was written)."""
    ends = {p: 0 for p in batches}
    with Producer(bootstrap_servers=bootstrap) as producer:
        for p, sizes in batches.items():
            for size in sizes:
                futures = [producer.send(topic, value, partition=p) for _ in range(size)]
                producer.flush(WAIT)
                if futures:
                    ends[p] = futures[-1].result(0).offset + 1
    return ends


def make_batched_topic(bootstrap: str, topic: str, batches: Mapping[int, Sequence[int]],
                       value: bytes = b"r") -> dict[int, int]:
    """Create ``topic`` with one partition per entry of ``batches`` and write them
    (``write_batches``); returns each partition's log end."""
    create_topic(bootstrap, topic, len(batches))
    return write_batches(bootstrap, topic, batches, value)


class Stream:
    """Produces round-robin over the partitions, ``rate`` records a second, until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float) -> None:
        self.producer = Producer(bootstrap_servers=bootstrap, linger_ms=5)
        self.futures: list[Any] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(topic, partitions, max(1, round(rate / 20))), daemon=True)
        self.thread.start()

    def _run(self, topic: str, partitions: int, burst: int) -> None:
        n = 0
        while not self.stopping.wait(0.05):
            for _ in range(burst):
                self.futures.append(self.producer.send(topic, b"x", partition=n % partitions))
                n += 1

    def stop(self) -> set[tuple[int, int]]:
        """Stop producing; returns (partition, offset) of every record sent."""
        self.stopping.set()
        self.thread.join(WAIT)
        self.producer.flush(WAIT)
        self.producer.close(WAIT)
        return {(m.partition, m.offset) for m in (f.result(WAIT) for f in self.futures)}


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offset of each partition of ``topic`` as groupkit's Admin reads
    it (None where none)."""
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    with Admin(bootstrap_servers=bootstrap) as admin:
        found = admin.list_group_offsets(group, wanted)
    return {p: (found[tp].offset if tp in found and found[tp].offset >= 0 else None)
            for p, tp in enumerate(wanted)}


def commit_as_peer(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` with confluent-kafka, outside any group generation."""
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
    peer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                               enable_auto_commit=False)
    try:
        return {p: peer.committed(kafka.TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        peer.close()
