"""Request round-trip latency: groupkit against kafka-python and confluent-kafka, one broker.

Sends N sequential Heartbeat requests (group "bench", a member the broker does not know, so it
answers UNKNOWN_MEMBER_ID at once) on one connection and reports the median and p99 latency.
Each client uses its lowest-level request path:

- groupkit: ``BrokerConnection.send(HeartbeatRequest(...)).result()``;
- kafka-python 3.x: ``KafkaNetClient.send_and_receive`` (the successor of ``KafkaClient.send``
  plus ``poll``) with its own ``HeartbeatRequest``;
- confluent-kafka has no raw request API, so it runs the cheapest round trip it offers:
  ``Producer.list_topics(topic, timeout)``, one Metadata request for one topic each call.

All three talk to the same LocalBroker (Tansu) in the same run.

    .venv/bin/python bench/roundtrip.py [--requests N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from groupkit.protocol.messages.group import HeartbeatRequest
from groupkit.runtime.connection import BrokerConnection
from groupkit.testing import LocalBroker

GROUP, MEMBER = "bench", "bench-member"
WARMUP = 200


def timed(call: Callable[[], object], n: int) -> list[float]:
    """Latencies (s) of ``n`` calls of ``call`` after a warm-up."""
    for _ in range(WARMUP):
        call()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def with_groupkit(broker: LocalBroker, n: int) -> list[float]:
    conn = BrokerConnection(broker.host, broker.port)
    request = HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=MEMBER)
    try:
        conn.connect()
        return timed(lambda: conn.send(request).result(10), n)
    finally:
        conn.close()


def with_kafka_python(broker: LocalBroker, n: int) -> list[float]:
    from kafka.net.compat import KafkaNetClient
    from kafka.protocol.consumer.group import HeartbeatRequest as KafkaHeartbeat

    client = KafkaNetClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        client._manager.bootstrap(timeout_ms=10_000)
        node = client.least_loaded_node()

        def call() -> object:
            request = KafkaHeartbeat(group_id=GROUP, generation_id=1, member_id=MEMBER)
            return client.send_and_receive(node, request, timeout_ms=10_000)
        return timed(call, n)
    finally:
        client.close()


def with_confluent(broker: LocalBroker, n: int) -> list[float]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    try:
        producer.list_topics(timeout=10)
        return timed(lambda: producer.list_topics("bench-roundtrip", timeout=10), n)
    finally:
        producer.flush(1)


def summary(latencies: list[float]) -> tuple[float, float]:
    """(median, p99) in microseconds."""
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1e6, p99 * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000, help="round trips per client")
    args = parser.parse_args()
    with LocalBroker() as broker:
        results = {
            "groupkit": summary(with_groupkit(broker, args.requests)),
            "kafka-python": summary(with_kafka_python(broker, args.requests)),
            "confluent-kafka": summary(with_confluent(broker, args.requests)),
        }
    print(f"{args.requests:,} sequential round trips on one connection (Tansu, loopback)")
    print(f"  {'client':<16} {'median µs':>10} {'p99 µs':>10}")
    for name, (median, p99) in results.items():
        print(f"  {name:<16} {median:>10.0f} {p99:>10.0f}")
    ours = results["groupkit"]
    for peer in ("kafka-python", "confluent-kafka"):
        theirs = results[peer]
        print(f"  {peer}/groupkit latency: median {theirs[0] / ours[0]:.2f}x, "
              f"p99 {theirs[1] / ours[1]:.2f}x (above 1: groupkit is faster)")


if __name__ == "__main__":
    main()
