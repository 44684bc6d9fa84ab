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
``repeat`` times (who goes first alternates; a warm-up produce precedes all of them); each
keeps its best run, and every run and the spread are printed. The ``CPU`` rows are the
process's CPU time (all threads: librdkafka's C threads count for confluent-kafka) over the
same timed window, per record, the least of the runs: far steadier than wall time on a loaded
machine.

``--txn-records`` is the most records a poll (and so a transaction) takes: groupkit's
``max_poll_records`` and confluent-kafka's ``consume(num_messages)``, 500 by default (groupkit's
and Java's max_poll_records); fewer per transaction weigh the per-transaction round trips more.

    .venv/bin/python bench/txn.py [--records N] [--rpw-records N] [--txn-records N] [--repeat R]
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


def idempotent_groupkit(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    from groupkit.producer import Producer

    with Producer(bootstrap_servers=bootstrap) as producer:
        assert producer.config.idempotent
        producer.partitions_for(topic)
        send = producer.send
        start, cpu = time.perf_counter(), time.process_time()
        last = None
        for i in range(n):
            last = send(topic, VALUE, partition=i % PARTITIONS)
        producer.flush(WAIT)
        done, cpu = time.perf_counter(), time.process_time() - cpu
    assert last is not None and last.result(0).offset >= 0
    return n / (done - start), cpu


def idempotent_confluent(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "log_level": 0})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        while True:
            try:
                produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                poll(0.001)
    left = producer.flush(WAIT)
    done, cpu = time.perf_counter(), time.process_time() - cpu
    if left:
        raise SystemExit(f"confluent-kafka: {left} records undelivered")
    return n / (done - start), cpu


def rpw_groupkit(bootstrap: str, source: str, sink: str, n: int,
                 per_txn: int) -> tuple[float, float, int]:
    from groupkit import Consumer, Producer, TopicPartition

    consumer = Consumer(bootstrap_servers=bootstrap, group_id=f"rpw-{uuid.uuid4().hex[:8]}",
                        enable_auto_commit=False, isolation_level="read_committed",
                        auto_offset_reset="earliest", max_poll_records=per_txn, **SESSION)
    producer = Producer(bootstrap_servers=bootstrap,
                        transactional_id=f"rpw-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        seen = txns = 0
        start, cpu = None, 0.0
        deadline = time.monotonic() + WAIT
        while seen < n and time.monotonic() < deadline:
            records = consumer.poll(1.0)
            if not records:
                continue
            if start is None:
                start, cpu = time.perf_counter(), time.process_time()
            producer.begin_transaction()
            # Keyed by plain tuples, made TopicPartitions once per transaction, as the
            # confluent-kafka loop below does (a TopicPartition per record would time the
            # bench's own objects, ~0.4 us each).
            ends: dict[tuple[str, int], int] = {}
            for r in records:
                producer.send(sink, r.value, partition=r.partition)
                ends[(r.topic, r.partition)] = r.offset + 1
            producer.send_offsets_to_transaction(
                {TopicPartition(t, p): o for (t, p), o in ends.items()},
                consumer.group_metadata(), 30)
            producer.commit_transaction(30)
            seen += len(records)
            txns += 1
        done, cpu = time.perf_counter(), time.process_time() - cpu
    finally:
        producer.close(10)
        consumer.close()
    if seen < n or start is None:
        raise SystemExit(f"groupkit: {seen} of {n} records in {WAIT} s")
    return n / (done - start), cpu, txns


def rpw_confluent(bootstrap: str, source: str, sink: str, n: int,
                  per_txn: int) -> tuple[float, float, int]:
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
        seen = txns = 0
        start, cpu = None, 0.0
        deadline = time.monotonic() + WAIT
        while seen < n and time.monotonic() < deadline:
            messages = [m for m in consumer.consume(per_txn, 1.0) if m.error() is None]
            if not messages:
                continue
            if start is None:
                start, cpu = time.perf_counter(), time.process_time()
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
            txns += 1
        done, cpu = time.perf_counter(), time.process_time() - cpu
    finally:
        consumer.close()
    if seen < n or start is None:
        raise SystemExit(f"confluent-kafka: {seen} of {n} records in {WAIT} s")
    return n / (done - start), cpu, txns


def _fill(bootstrap: str, topic: str, n: int) -> None:
    from groupkit.producer import Producer

    with Producer(bootstrap_servers=bootstrap) as producer:
        for i in range(n):
            producer.send(topic, VALUE, partition=i % PARTITIONS)
        producer.flush(WAIT)


def _spread(runs: list[tuple[float, float]], n: int) -> str:
    rates = sorted(r for r, _ in runs)
    cpus = sorted(c / n * 1e6 for _, c in runs)
    return (f"{rates[0]:,.0f}-{rates[-1]:,.0f} rec/s, CPU {cpus[0]:.2f}-{cpus[-1]:.2f} us/record"
            f" over {len(runs)} runs")


def measure(records: int = 300_000, rpw_records: int = 50_000, repeat: int = 3,
            bootstrap: str | None = None, txn_records: int = 500) -> list[Row]:
    """The rows: each client's best rate of ``repeat`` alternating runs, and its least CPU
    time per record (the process's, all threads: a peer's C threads count too)."""
    if bootstrap is None:
        with LocalBroker() as broker:
            return measure(records, rpw_records, repeat, broker.bootstrap_servers,
                           txn_records)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    idem = {"groupkit": idempotent_groupkit, "confluent-kafka": idempotent_confluent}
    rpw = {"groupkit": rpw_groupkit, "confluent-kafka": rpw_confluent}
    with Admin(bootstrap_servers=bootstrap) as admin:
        # The broker's first topic and produce cost it more than later ones: paid by nobody.
        warm = f"bench-warm-{time.monotonic_ns()}"
        admin.create_topics([warm], num_partitions=PARTITIONS)
        _fill(bootstrap, warm, 20_000)
        for round_ in range(repeat):
            # Who goes first alternates, so neither always meets the other's leftovers.
            order = list(idem) if round_ % 2 == 0 else list(reversed(idem))
            for client in order:
                topic = f"bench-idem-{client}-{round_}-{time.monotonic_ns()}"
                admin.create_topics([topic], num_partitions=PARTITIONS)
                rate, cpu = idem[client](bootstrap, topic, records)
                runs.setdefault((client, "idem"), []).append((rate, cpu))
                print(f"  produce idempotent {client}: {rate:,.0f} rec/s,"
                      f" CPU {cpu / records * 1e6:.2f} us/record", flush=True)
            for client in order:
                stamp = f"{client}-{round_}-{time.monotonic_ns()}"
                source, sink = f"bench-rpw-in-{stamp}", f"bench-rpw-out-{stamp}"
                admin.create_topics([source, sink], num_partitions=PARTITIONS)
                _fill(bootstrap, source, rpw_records)
                rate, cpu, txns = rpw[client](bootstrap, source, sink, rpw_records,
                                              txn_records)
                runs.setdefault((client, "rpw"), []).append((rate, cpu))
                # The transactions' count shows both committed the same size (one poll each).
                print(f"  read-process-write txn {client}: {rate:,.0f} rec/s,"
                      f" CPU {cpu / rpw_records * 1e6:.2f} us/record, {txns} transactions",
                      flush=True)
    for (client, kind), got in runs.items():
        print(f"  {kind} {client}: {_spread(got, records if kind == 'idem' else rpw_records)}")

    def best(client: str, kind: str) -> float | None:
        got = runs.get((client, kind))
        return max(r for r, _ in got) if got else None

    def least_cpu(client: str, kind: str, n: int) -> float | None:
        got = runs.get((client, kind))
        return min(c for _, c in got) / n * 1e6 if got else None

    rows = []
    for kind, name, n in (("idem", "produce idempotent", records),
                          ("rpw", "read-process-write txn", rpw_records)):
        rows.append(Row(name, "rec/s", best("groupkit", kind),
                        {"confluent-kafka": best("confluent-kafka", kind)}, True))
        rows.append(Row(f"{name} CPU", "us/rec", least_cpu("groupkit", kind, n),
                        {"confluent-kafka": least_cpu("confluent-kafka", kind, n)}, False))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000,
                        help="records per client, idempotent produce")
    parser.add_argument("--rpw-records", type=int, default=50_000,
                        help="records per client, read-process-write")
    parser.add_argument("--txn-records", type=int, default=500,
                        help="most records per poll, so per transaction, read-process-write")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"txn: idempotent produce {args.records:,} records, read-process-write"
          f" {args.rpw_records:,} records in transactions of up to {args.txn_records}, 100 B,"
          f" {PARTITIONS} partitions, best of {args.repeat} (Tansu, loopback)")
    print_rows(measure(args.records, args.rpw_records, args.repeat,
                       txn_records=args.txn_records))


if __name__ == "__main__":
    main()
