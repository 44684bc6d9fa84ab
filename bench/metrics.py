"""What the metrics cost: the same records consumed with and without them, in the same run.

Two loops, each run with metrics off and on, alternating (off, on, on, off, ...) so a change
in the machine's load hits both alike; the best run of each is kept. Each topic size (4 and
64 partitions by default) gets its own topic of N records of 100 bytes:

- ``poll loop``: a ``Consumer`` assigned every partition of the topic, reading the records
  with ``poll()`` and nothing else (the worst case for the relative cost: no application
  work). "on" adds ``PrometheusMetrics`` and ``HealthCheck`` as hooks.
- ``GroupConsumer``: a subclass whose ``process(record)`` only counts; "on" sets
  ``metrics_port=0`` (the hooks plus a /metrics and /healthz server, scraped once a second
  by a thread of this benchmark, as Prometheus would).

Records/s are counted from the first record to the N-th. Setup (topic, records) uses
confluent-kafka and is not measured.

    .venv/bin/python -m bench.metrics [--records N] [--repeat R] [--partitions 4,64]
"""

from __future__ import annotations

import argparse
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any

from bench.group import VALUE, make_topic

SETTINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
            "auto_offset_reset": "earliest"}


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 200000})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("could not produce the benchmark records")


def poll_loop(bootstrap: str, topic: str, partitions: int, n: int, metrics: bool) -> float:
    """Records/s of a bare poll loop over ``n`` records."""
    from assignors import TopicPartition
    from groupkit.consumer import Consumer

    hooks: list[Any] = []
    if metrics:
        from groupkit.metrics import HealthCheck, PrometheusMetrics

        hooks = [PrometheusMetrics()]
    consumer = Consumer(bootstrap_servers=bootstrap, hooks=hooks, auto_offset_reset="earliest")
    if metrics:
        consumer.hooks.append(HealthCheck.for_config(consumer.config))
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        count, first = 0, 0.0
        deadline = time.monotonic() + 120
        while count < n:
            got = len(consumer.poll(0.5))
            if got and not count:
                first = time.monotonic()
            count += got
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {count} of {n} records in 120 s")
        return count / (time.monotonic() - first)
    finally:
        consumer.close()


def group_consumer(bootstrap: str, topic: str, n: int, metrics: bool) -> float:
    """Records/s of a GroupConsumer whose process() counts, over ``n`` records."""
    from groupkit.consumer import ConsumerRecord
    from groupkit.group_consumer import GroupConsumer

    class Counting(GroupConsumer):
        def __init__(self, **settings: Any) -> None:
            super().__init__(**settings)
            self.count = 0
            self.first = self.last = 0.0

        def process(self, record: ConsumerRecord) -> None:
            if not self.count:
                self.first = time.monotonic()
            self.count += 1
            if self.count == n:
                self.last = time.monotonic()
                self.stop()

    worker = Counting(bootstrap_servers=bootstrap, group_id=f"bench-{uuid.uuid4().hex[:8]}",
                      topics=[topic], metrics_port=0 if metrics else None, **SETTINGS)
    done = threading.Event()
    scraper = threading.Thread(target=_scrape_while, args=(worker, done), daemon=True)
    scraper.start()
    try:
        worker.run()
    finally:
        done.set()
        scraper.join(5)
    if worker.count < n:
        raise RuntimeError(f"only {worker.count} of {n} records")
    return n / (worker.last - worker.first)


def _scrape_while(worker: Any, done: threading.Event) -> None:
    """Scrape the worker's /metrics once a second while it runs (when it serves them)."""
    while not done.wait(1.0):
        address = worker.metrics_address
        if address is None:
            continue
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{address[1]}/metrics", timeout=5):
                pass
        except OSError:
            if not done.is_set():  # the server closes with run(): only then may this fail
                raise


def measure(name: str, run: Callable[[bool], float], repeat: int) -> tuple[float, float]:
    rates: dict[bool, list[float]] = {False: [], True: []}
    for i in range(repeat):
        for metrics in (False, True) if i % 2 == 0 else (True, False):
            rates[metrics].append(run(metrics))
            print(f"  {name:<22} metrics {'on ' if metrics else 'off'} "
                  f"{rates[metrics][-1]:>10,.0f} rec/s", flush=True)
    return max(rates[False]), max(rates[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitions", default="4,64",
                        help="comma-separated partition counts, one topic each")
    args = parser.parse_args()
    sizes = [int(p) for p in args.partitions.split(",")]

    from groupkit.testing import LocalBroker

    rows: list[tuple[str, tuple[float, float]]] = []
    with LocalBroker() as broker:
        bootstrap = broker.bootstrap_servers
        print(f"groupkit bench/metrics.py: {args.records:,} records of 100 B per topic, "
              f"best of {args.repeat} alternating runs")
        for partitions in sizes:
            topic = f"metrics-{partitions}-{uuid.uuid4().hex[:6]}"
            make_topic(bootstrap, topic, partitions)
            produce(bootstrap, topic, args.records, partitions)
            name = f"poll loop, {partitions} p"
            rows.append((name, measure(name, lambda m, t=topic, p=partitions: poll_loop(
                bootstrap, t, p, args.records, m), args.repeat)))
            name = f"GroupConsumer, {partitions} p"
            rows.append((name, measure(name, lambda m, t=topic: group_consumer(
                bootstrap, t, args.records, m), args.repeat)))
    print(f"{'loop':<22} {'off rec/s':>12} {'on rec/s':>12} {'cost':>7}")
    for name, (off, on) in rows:
        print(f"{name:<22} {off:>12,.0f} {on:>12,.0f} {(1 - on / off) * 100:>6.1f}%")


if __name__ == "__main__":
    main()
