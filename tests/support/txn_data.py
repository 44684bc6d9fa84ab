"""Reading a topic as a read_committed (or read_uncommitted) reader, with groupkit or a peer:
what a transactional test checks its output with."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from assignors import TopicPartition
from groupkit.consumer import Consumer

WAIT = 20.0


def read_groupkit(bootstrap: str, topic: str, partitions: int, done: Callable[[list[bytes]], bool],
                  isolation: str = "read_committed", timeout: float = WAIT) -> list[bytes]:
    """Values of ``topic`` from the start, read by a groupkit consumer until ``done(values)``;
    TimeoutError (with what was read) after ``timeout`` s."""
    values: list[bytes] = []
    with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                  auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while not done(values):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(values)} values of {topic}: {values[:20]}")
            values.extend(r.value for r in consumer.poll(0.5) if r.value is not None)
    return values


def read_confluent(bootstrap: str, topic: str, done: Callable[[list[bytes]], bool],
                   isolation: str = "read_committed", timeout: float = WAIT) -> list[bytes]:
    """The same with confluent-kafka's consumer (partitions assigned, from the start)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest", "isolation.level": isolation,
        "enable.auto.commit": False, "log_level": 0})
    values: list[bytes] = []
    try:
        parts = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in parts])
        deadline = time.monotonic() + timeout
        while not done(values):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(values)} values of {topic}: {values[:20]}")
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and message.value() is not None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def read_kafka_python(bootstrap: str, topic: str, done: Callable[[list[bytes]], bool],
                      isolation: str = "read_committed", timeout: float = WAIT) -> list[bytes]:
    """The same with kafka-python's consumer (partitions assigned, from the start)."""
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                   auto_offset_reset="earliest", enable_auto_commit=False)
    values: list[bytes] = []
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        consumer.assign([kafka.TopicPartition(topic, p) for p in parts])
        deadline = time.monotonic() + timeout
        while not done(values):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(values)} values of {topic}: {values[:20]}")
            for records in consumer.poll(500).values():
                values.extend(r.value for r in records if r.value is not None)
    finally:
        consumer.close()
    return values


def until(*markers: bytes) -> Callable[[list[bytes]], bool]:
    """``done`` for a reader: stop once every one of ``markers`` was read."""
    return lambda values: set(markers) <= set(values)


def log_entries(bootstrap: str, topic: str, partition: int,
                check_crc: bool = True) -> list[tuple[object, int]]:
    """What the log of one partition holds, from offset 0, read raw with groupkit's Fetch:
    each record's value, and each transaction marker as "COMMIT" or "ABORT", with the
    producer id that wrote it. Shows what a coordinator did whatever a reader filters.
    (The mock cluster answers one batch per Fetch and writes its markers with CRC 0:
    ``check_crc=False`` there.)"""
    from groupkit.config import ClientConfig
    from groupkit.protocol.messages.fetch import (
        FetchRequest,
        FetchRequestPartition,
        FetchRequestTopic,
    )
    from groupkit.protocol.records import CONTROL_COMMIT, control_type, decode_batches
    from groupkit.runtime.cluster import Cluster

    cluster = Cluster(ClientConfig(bootstrap_servers=bootstrap))
    try:
        topic_id = cluster.refresh([topic]).topics[topic].topic_id
        out: list[tuple[object, int]] = []
        offset = 0
        while True:
            request = FetchRequest(max_wait_ms=100, min_bytes=1, topics=[FetchRequestTopic(
                topic=topic, topic_id=topic_id, partitions=[FetchRequestPartition(
                    partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])])
            answer = cluster.send_to_leader(topic, partition, request).result(WAIT)
            part = answer.responses[0].partitions[0]
            batches = [b for b in decode_batches(part.records or b"", check_crc=check_crc)
                       if b.last_offset >= offset]
            for batch in batches:
                if batch.is_control:
                    kind = control_type(batch.records[0])
                    out.append(("COMMIT" if kind == CONTROL_COMMIT else "ABORT",
                                batch.producer_id))
                else:
                    out.extend((r.value, batch.producer_id) for r in batch.records)
            if not batches:
                return out
            offset = batches[-1].last_offset + 1
            if offset >= part.high_watermark:
                return out
    finally:
        cluster.close()


def committed_view(entries: list[tuple[object, int]]) -> list[bytes]:
    """The values a read_committed reader must see in one partition's log (``log_entries``):
    a transactional producer's records count once its COMMIT marker follows them, never when
    an ABORT does; computed from the markers, whatever the broker's Fetch answers say."""
    pending: dict[int, list[bytes]] = {}
    out: list[bytes] = []
    for value, pid in entries:
        if value == "COMMIT":
            out.extend(pending.pop(pid, []))
        elif value == "ABORT":
            pending.pop(pid, None)
        else:
            assert isinstance(value, bytes)
            pending.setdefault(pid, []).append(value)
    return out


# --- two transactional producers of one client, commits and aborts interleaved ----------------

#: What ``interleaved_transactions`` leaves for a read_committed reader, and what it aborts.
INTERLEAVED_COMMITTED = [b"A1-0", b"A1-1", b"A3-0", b"A3-1", b"end-0", b"end-1"]
INTERLEAVED_ABORTED = [b"B1-0", b"B1-1", b"B1-0b", b"A2-0"]


class _GroupkitTxn:
    def __init__(self, bootstrap: str, txn_id: str) -> None:
        from groupkit.producer import Producer

        self.p = Producer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        self.p.init_transactions(WAIT)

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int) -> None:
        self.p.send(topic, value, partition=partition)

    def flush(self) -> None:
        self.p.flush(WAIT)

    def commit(self) -> None:
        self.p.commit_transaction(WAIT)

    def abort(self) -> None:
        self.p.abort_transaction(WAIT)

    def close(self) -> None:
        self.p.close(5)


class _ConfluentTxn(_GroupkitTxn):
    def __init__(self, bootstrap: str, txn_id: str) -> None:
        import confluent_kafka

        self.p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                                           "transactional.id": txn_id, "linger.ms": 0})
        self.p.init_transactions(WAIT)

    def send(self, topic: str, value: bytes, partition: int) -> None:
        self.p.produce(topic, value, partition=partition)

    def flush(self) -> None:
        assert self.p.flush(WAIT) == 0

    def close(self) -> None:
        self.p.flush(5)


class _KafkaPythonTxn(_GroupkitTxn):
    def __init__(self, bootstrap: str, txn_id: str) -> None:
        import kafka

        self.p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        self.p.init_transactions()

    def begin(self) -> None:
        self.p.begin_transaction()

    def flush(self) -> None:
        self.p.flush(WAIT)

    def commit(self) -> None:
        self.p.commit_transaction()

    def abort(self) -> None:
        self.p.abort_transaction()

    def close(self) -> None:
        self.p.close(5)


TRANSACTIONAL_PRODUCERS = {"groupkit": _GroupkitTxn, "confluent-kafka": _ConfluentTxn,
                           "kafka-python": _KafkaPythonTxn}


def interleaved_transactions(client: str, bootstrap: str, topic: str) -> None:
    """Two transactional producers of ``client`` write to ``topic``'s partitions 0 and 1,
    their transactions open at once: A's first commits while B's, whose records lie between
    A's, aborts; then A aborts one and commits the next; B commits the ends. Each record is
    flushed before the next step, so the log holds every record, aborted ones included."""
    make = TRANSACTIONAL_PRODUCERS[client]
    a = make(bootstrap, f"{topic}-a")
    b = make(bootstrap, f"{topic}-b")
    try:
        a.begin()
        b.begin()
        for producer, value, partition in ((a, b"A1-0", 0), (b, b"B1-0", 0), (a, b"A1-1", 1),
                                           (b, b"B1-1", 1), (b, b"B1-0b", 0)):
            producer.send(topic, value, partition)
            producer.flush()
        a.commit()
        b.abort()
        a.begin()
        a.send(topic, b"A2-0", 0)
        a.flush()
        a.abort()
        a.begin()
        a.send(topic, b"A3-0", 0)
        a.send(topic, b"A3-1", 1)
        a.commit()
        b.begin()
        b.send(topic, b"end-0", 0)
        b.send(topic, b"end-1", 1)
        b.commit()
    finally:
        a.close()
        b.close()
