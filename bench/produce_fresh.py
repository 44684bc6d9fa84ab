"""One producer at its defaults in a fresh process, timed from before its import: the child of
``bench/produce.py``'s ``defaults`` row.

It imports nothing but the standard library before the clock starts, so the time covers what a
new user's script pays: importing the client, building the producer (connecting, learning the
brokers' versions and the topic's partitions), sending ``N`` records of 100 bytes to partition
``i % 4`` and flushing. Every 1,000th delivery is checked. Prints one JSON line: the seconds of
each phase and in all.

    .venv/bin/python bench/produce_fresh.py <groupkit|confluent-kafka> <bootstrap> <topic> <N>
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402

VALUE = bytes(range(100))
PARTITIONS = 4
CHECK_EVERY = 1000
WAIT = 120.0


def with_groupkit(bootstrap: str, topic: str, n: int) -> dict[str, float]:
    from groupkit.producer import Producer

    imported = time.perf_counter()
    producer = Producer(bootstrap_servers=bootstrap)
    built = time.perf_counter()
    send = producer.send
    checked = []
    for i in range(n):
        future = send(topic, VALUE, partition=i % PARTITIONS)
        if i % CHECK_EVERY == 0:
            checked.append(future)
    sent = time.perf_counter()
    producer.flush(WAIT)
    done = time.perf_counter()
    for future in checked:
        future.result(0)
    producer.close()
    return {"import": imported - STARTED, "build": built - imported, "send": sent - built,
            "flush": done - sent, "total": done - STARTED}


def with_confluent(bootstrap: str, topic: str, n: int) -> dict[str, float]:
    from confluent_kafka import Producer

    imported = time.perf_counter()
    errors: list[object] = []
    delivered = [0]

    def check(err: object, _: object) -> None:
        delivered[0] += 1
        if err is not None:
            errors.append(err)

    producer = Producer({"bootstrap.servers": bootstrap})
    built = time.perf_counter()
    produce, poll = producer.produce, producer.poll
    for i in range(n):
        # At its defaults librdkafka queues at most 100,000 messages; a full queue raises
        # BufferError, and the application polls (serving delivery reports) and tries again.
        while True:
            try:
                if i % CHECK_EVERY == 0:
                    produce(topic, VALUE, partition=i % PARTITIONS, on_delivery=check)
                else:
                    produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                poll(0.001)
    sent = time.perf_counter()
    left = producer.flush(WAIT)
    done = time.perf_counter()
    if left or errors or delivered[0] != (n + CHECK_EVERY - 1) // CHECK_EVERY:
        raise SystemExit(f"confluent-kafka: {left} undelivered, errors {errors[:3]}")
    return {"import": imported - STARTED, "build": built - imported, "send": sent - built,
            "flush": done - sent, "total": done - STARTED}


RUNS = {"groupkit": with_groupkit, "confluent-kafka": with_confluent}


if __name__ == "__main__":
    client, bootstrap, topic, count = sys.argv[1:5]
    print(json.dumps(RUNS[client](bootstrap, topic, int(count))), flush=True)
