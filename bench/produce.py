"""Producer throughput: groupkit against kafka-python and confluent-kafka on one local broker.

Each client sends N records of 100 bytes (null keys, no headers, no compression) to its own
3-partition topic and flushes; the rate is N over the time from the first send to the end of
the flush. All use the same settings: acks=all, linger 5 ms, 1,000,000-byte batches
(confluent-kafka's default batch size). Every 1,000th record's delivery is checked. With
``--repeat R`` the clients take turns R times and each keeps its best run, which evens out
the noise of a shared machine.

    .venv/bin/python bench/produce.py [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from groupkit.admin import Admin
from groupkit.producer import Producer
from groupkit.testing import LocalBroker

VALUE = bytes(range(100))
PARTITIONS = 3
LINGER_MS = 5
BATCH_BYTES = 1_000_000
CHECK_EVERY = 1000
WAIT = 120.0

#: (records/s from first send to flushed, records/s of the send calls alone)
Rates = tuple[float, float]


def with_groupkit(bootstrap: str, topic: str, n: int) -> Rates:
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS,
                  batch_size=BATCH_BYTES) as producer:
        producer.partitions_for(topic)
        send = producer.send
        checked = []
        start = time.perf_counter()
        for i in range(n):
            future = send(topic, VALUE)
            if i % CHECK_EVERY == 0:
                checked.append(future)
        sent = time.perf_counter()
        producer.flush(WAIT)
        done = time.perf_counter()
    for future in checked:
        future.result(0)
    return n / (done - start), n / (sent - start)


def with_kafka_python(bootstrap: str, topic: str, n: int) -> Rates:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS,
                             batch_size=BATCH_BYTES, max_request_size=2 * BATCH_BYTES)
    try:
        producer.partitions_for(topic)
        send = producer.send
        checked = []
        start = time.perf_counter()
        for i in range(n):
            future = send(topic, VALUE)
            if i % CHECK_EVERY == 0:
                checked.append(future)
        sent = time.perf_counter()
        producer.flush(WAIT)
        done = time.perf_counter()
        for future in checked:
            future.get(0)
    finally:
        producer.close()
    return n / (done - start), n / (sent - start)


def with_confluent(bootstrap: str, topic: str, n: int) -> Rates:
    from confluent_kafka import Producer as ConfluentProducer

    errors: list[object] = []
    delivered = [0]

    def check(err: object, _: object) -> None:
        delivered[0] += 1
        if err is not None:
            errors.append(err)

    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": LINGER_MS, "batch.size": BATCH_BYTES,
                                  "log_level": 0})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                if i % CHECK_EVERY == 0:
                    produce(topic, VALUE, on_delivery=check)
                else:
                    produce(topic, VALUE)
                break
            except BufferError:
                poll(0.001)
    sent = time.perf_counter()
    left = producer.flush(WAIT)
    done = time.perf_counter()
    if left or errors or delivered[0] != (n + CHECK_EVERY - 1) // CHECK_EVERY:
        raise SystemExit(f"confluent-kafka: {left} undelivered, errors {errors[:3]}")
    return n / (done - start), n / (sent - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per client")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of all clients, interleaved; each client's best is kept")
    args = parser.parse_args()
    n = args.records
    clients: dict[str, Callable[[str, str, int], Rates]] = {
        "groupkit": with_groupkit,
        "kafka-python": with_kafka_python,
        "confluent-kafka": with_confluent,
    }
    results: dict[str, Rates] = {}
    with LocalBroker() as broker, Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        for round_ in range(args.repeat):
            admin.create_topics([f"bench-{name}-{round_}" for name in clients],
                                num_partitions=PARTITIONS)
            for name, run in clients.items():
                gc.collect()
                rates = run(broker.bootstrap_servers, f"bench-{name}-{round_}", n)
                results[name] = max(results.get(name, rates), rates)
    print(f"{n:,} records of {len(VALUE)} bytes, acks=all, linger {LINGER_MS} ms, "
          f"{BATCH_BYTES:,}-byte batches, {PARTITIONS} partitions (Tansu, loopback)")
    print(f"  {'client':<16} {'records/s':>12} {'send() calls/s':>16}")
    for name, (total, calls) in results.items():
        print(f"  {name:<16} {total:>12,.0f} {calls:>16,.0f}")
    ours = results["groupkit"][0]
    for peer in ("kafka-python", "confluent-kafka"):
        print(f"  groupkit/{peer} = {ours / results[peer][0]:.2f}x")


if __name__ == "__main__":
    main()
