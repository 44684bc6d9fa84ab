"""Idempotent produce and transactional read-process-write: groupkit against confluent-kafka.

``produce idempotent``: each client sends N records of 100 bytes to partition ``i % 4`` of its
own 4-partition topic and flushes, groupkit at its defaults (idempotent since issue 28) and
confluent-kafka at its defaults with ``enable.idempotence=true`` (librdkafka's default is false);
the rate is N over the time from the first send to the end of the flush.

``read-process-write txn``: each client's consumer group reads N records (4 partitions, 100
bytes) with read_committed and, per poll, writes each record's value to an output topic in a
transaction that also commits the poll's offsets (send_offsets_to_transaction with the
consumer's group metadata), until all N are consumed; the rate is N over the time from the
first records to the last commit (the group's join is left out). Both clients take turns
``repeat`` times; each keeps its best run.

    .venv/bin/python bench/txn.py [--records N] [--rpw-records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.table import Row, print_rows  # noqa: E402
from groupkit.admin import Admin  # noqa: E402
from groupkit.testing import LocalBroker  # noqa: E402

VALUE = bytes(range(100))
PARTITIONS = 4
WAIT = 120.0
SESSION = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}


def idempotent_groupkit(bootstrap: str, topic: str, n: int) -> float:
    from groupkit.producer import Producer

    with Producer(bootstrap_servers=bootstrap) as producer:
        assert producer.config.idempotent
        producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        last = None
        for i in range(n):
            last = send(topic, VALUE, partition=i % PARTITIONS)
        producer.flush(WAIT)
        done = time.perf_counter()
    assert last is not None and last.result(0).offset >= 0
    return n / (done - start)


def idempotent_confluent(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "log_level": 0})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                poll(0.001)
    left = producer.flush(WAIT)
    done = time.perf_counter()
    if left:
        raise SystemExit(f"confluent-kafka: {left} records undelivered")
    return n / (done - start)


def rpw_groupkit(bootstrap: str, source: str, sink: str, n: int) -> float:
    from groupkit import Consumer, Producer, TopicPartition

    consumer = Consumer(bootstrap_servers=bootstrap, group_id=f"rpw-{uuid.uuid4().hex[:8]}",
                        enable_auto_commit=False, isolation_level="read_committed",
                        auto_offset_reset="earliest", **SESSION)
    producer = Producer(bootstrap_servers=bootstrap,
                        transactional_id=f"rpw-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        seen = 0
        start = None
        deadline = time.monotonic() + WAIT
        while seen < n and time.monotonic() < deadline:
            records = consumer.poll(1.0)
            if not records:
                continue
            if start is None:
                start = time.perf_counter()
            producer.begin_transaction()
            ends = {}
            for r in records:
                producer.send(sink, r.value, partition=r.partition)
                ends[TopicPartition(r.topic, r.partition)] = r.offset + 1
            producer.send_offsets_to_transaction(ends, consumer.group_metadata(), 30)
            producer.commit_transaction(30)
            seen += len(records)
        done = time.perf_counter()
    finally:
        producer.close(10)
        consumer.close()
    if seen < n or start is None:
        raise SystemExit(f"groupkit: {seen} of {n} records in {WAIT} s")
    return n / (done - start)


def rpw_confluent(bootstrap: str, source: str, sink: str, n: int) -> float:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"rpw-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False, "isolation.level": "read_committed",
        "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500, "log_level": 0})
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                                         "transactional.id": f"rpw-{uuid.uuid4().hex[:8]}"})
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        seen = 0
        start = None
        deadline = time.monotonic() + WAIT
        while seen < n and time.monotonic() < deadline:
            messages = [m for m in consumer.consume(500, 1.0) if m.error() is None]
            if not messages:
                continue
            if start is None:
                start = time.perf_counter()
            producer.begin_transaction()
            ends: dict[tuple[str, int], int] = {}
            for m in messages:
                while True:
                    try:
                        producer.produce(sink, m.value(), partition=m.partition())
                        break
                    except BufferError:
                        producer.poll(0.001)
                ends[(m.topic(), m.partition())] = m.offset() + 1
            producer.send_offsets_to_transaction(
                [confluent_kafka.TopicPartition(t, p, o) for (t, p), o in ends.items()],
                consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            seen += len(messages)
        done = time.perf_counter()
    finally:
        consumer.close()
    if seen < n or start is None:
        raise SystemExit(f"confluent-kafka: {seen} of {n} records in {WAIT} s")
    return n / (done - start)


def _fill(bootstrap: str, topic: str, n: int) -> None:
    from groupkit.producer import Producer

    with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(n):
            producer.send(topic, VALUE, partition=i % PARTITIONS)
        producer.flush(WAIT)


def measure(records: int = 300_000, rpw_records: int = 50_000, repeat: int = 2,
            bootstrap: str | None = None) -> list[Row]:
    """The two rows (best of ``repeat`` interleaved runs per client)."""
    if bootstrap is None:
        with LocalBroker() as broker:
            return measure(records, rpw_records, repeat, broker.bootstrap_servers)
    best: dict[tuple[str, str], float] = {}
    idem = {"groupkit": idempotent_groupkit, "confluent-kafka": idempotent_confluent}
    rpw = {"groupkit": rpw_groupkit, "confluent-kafka": rpw_confluent}
    with Admin(bootstrap_servers=bootstrap) as admin:
        for round_ in range(repeat):
            for client, run in idem.items():
                topic = f"bench-idem-{client}-{round_}-{time.monotonic_ns()}"
                admin.create_topics([topic], num_partitions=PARTITIONS)
                rate = run(bootstrap, topic, records)
                best[client, "idem"] = max(best.get((client, "idem"), 0.0), rate)
                print(f"  produce idempotent {client}: {rate:,.0f} rec/s", flush=True)
            for client, rpw_run in rpw.items():
                stamp = f"{client}-{round_}-{time.monotonic_ns()}"
                source, sink = f"bench-rpw-in-{stamp}", f"bench-rpw-out-{stamp}"
                admin.create_topics([source, sink], num_partitions=PARTITIONS)
                _fill(bootstrap, source, rpw_records)
                rate = rpw_run(bootstrap, source, sink, rpw_records)
                best[client, "rpw"] = max(best.get((client, "rpw"), 0.0), rate)
                print(f"  read-process-write txn {client}: {rate:,.0f} rec/s", flush=True)
    return [Row("produce idempotent", "rec/s", best.get(("groupkit", "idem")),
                {"confluent-kafka": best.get(("confluent-kafka", "idem"))}, True),
            Row("read-process-write txn", "rec/s", best.get(("groupkit", "rpw")),
                {"confluent-kafka": best.get(("confluent-kafka", "rpw"))}, True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000,
                        help="records per client, idempotent produce")
    parser.add_argument("--rpw-records", type=int, default=50_000,
                        help="records per client, read-process-write")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"txn: idempotent produce {args.records:,} records, read-process-write"
          f" {args.rpw_records:,} records, 100 B, {PARTITIONS} partitions, best of"
          f" {args.repeat} (Tansu, loopback)")
    print_rows(measure(args.records, args.rpw_records, args.repeat))


if __name__ == "__main__":
    main()
