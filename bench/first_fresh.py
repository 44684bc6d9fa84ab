"""One consumer in a fresh process and a new group, timed from before its import to its first
record: the child of ``bench/first.py``'s ``first fresh`` row.

It imports nothing but the standard library before the clock starts, so the time covers what
a new member's process pays: importing the client, building the consumer, finding the
coordinator, joining (Tansu holds a new group's JoinGroup for about half the session timeout),
syncing, finding the start offsets (earliest) and the first fetch. Every client runs with the
same group timing (session 6000 ms, heartbeat 500 ms), earliest reset, no auto-commit, and
otherwise its defaults. Prints one JSON line: seconds from the start to the import's end, to the
consumer built and subscribed, and to the first record.

    .venv/bin/python bench/first_fresh.py <client> <bootstrap> <topic> <group>
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

SESSION_MS = 6000
HEARTBEAT_MS = 500
POLL_S = 0.5
WAIT_S = 60.0

Phases = dict[str, float]


def _until_first(poll: Callable[[], int], phases: Phases) -> Phases:
    deadline = time.perf_counter() + WAIT_S
    while time.perf_counter() < deadline:
        if poll():
            phases["first"] = time.perf_counter() - STARTED
            return phases
    raise SystemExit("no record within the wait")


def with_groupkit(bootstrap: str, topic: str, group: str) -> Phases:
    from groupkit.consumer import Consumer

    phases = {"import": time.perf_counter() - STARTED}
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    consumer.subscribe([topic])
    phases["built"] = time.perf_counter() - STARTED
    try:
        return _until_first(lambda: len(consumer.poll(POLL_S)), phases)
    finally:
        consumer.close()


def with_aiokafka(bootstrap: str, topic: str, group: str) -> Phases:
    import asyncio

    from aiokafka import AIOKafkaConsumer

    phases = {"import": time.perf_counter() - STARTED}

    async def run() -> Phases:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS)
        await consumer.start()
        phases["built"] = time.perf_counter() - STARTED
        try:
            deadline = time.perf_counter() + WAIT_S
            while time.perf_counter() < deadline:
                batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                if any(batches.values()):
                    phases["first"] = time.perf_counter() - STARTED
                    return phases
            raise SystemExit("no record within the wait")
        finally:
            await consumer.stop()

    return asyncio.run(run())


def with_confluent(bootstrap: str, topic: str, group: str) -> Phases:
    from confluent_kafka import Consumer

    phases = {"import": time.perf_counter() - STARTED}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": SESSION_MS,
                         "heartbeat.interval.ms": HEARTBEAT_MS})
    consumer.subscribe([topic])
    phases["built"] = time.perf_counter() - STARTED

    def poll() -> int:
        message = consumer.poll(POLL_S)
        return int(message is not None and message.error() is None)

    try:
        return _until_first(poll, phases)
    finally:
        consumer.close()


def with_kafka_python(bootstrap: str, topic: str, group: str) -> Phases:
    from kafka import KafkaConsumer

    phases = {"import": time.perf_counter() - STARTED}
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    phases["built"] = time.perf_counter() - STARTED

    def poll() -> int:
        batches = consumer.poll(timeout_ms=int(POLL_S * 1000))
        return sum(len(records) for records in batches.values())

    try:
        return _until_first(poll, phases)
    finally:
        consumer.close()


RUNS = {"groupkit": with_groupkit, "aiokafka": with_aiokafka, "confluent-kafka": with_confluent,
        "kafka-python": with_kafka_python}


if __name__ == "__main__":
    client, bootstrap, topic, group = sys.argv[1:5]
    print(json.dumps(RUNS[client](bootstrap, topic, group)), flush=True)
