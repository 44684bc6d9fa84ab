"""Metrics and /healthz of real consumers on the local broker, scraped over HTTP and compared
with what the test measures itself: records produced and handed over, the producer's offsets,
the partitions each worker's own callbacks say it holds, and the broker's view of the group."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import Consumer, ConsumerRecord
from groupkit.group_consumer import GroupConsumer, RunSummary
from groupkit.metrics import PrometheusMetrics, serve
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic, make_batched_topic, write_batches
from tests.support.group_workers import FAST_GROUP, InThread
from tests.support.metrics_scrape import healthz, scrape, value, values
from tests.support.waits import eventually

pytestmark = pytest.mark.broker

WAIT = 45.0
#: Every record's value: 50 bytes, so the byte counters have something to count.
VALUE = b"x" * 50


class Counted(GroupConsumer):
    """Counts what it processes and keeps, from its own callbacks, what it holds."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**{**FAST_GROUP, "metrics_port": 0, **settings})
        self.lock = threading.Lock()
        self.seen: collections.Counter[int] = collections.Counter()
        self.held: set[int] = set()
        self.assignments = 0
        self.revoked = 0
        self.stuck = threading.Event()
        self.stuck_at = 0.0
        self.release = threading.Event()
        self.release.set()

    def process(self, record: ConsumerRecord) -> None:
        if not self.release.is_set():
            self.stuck_at = time.monotonic()
            self.stuck.set()
            assert self.release.wait(WAIT), "the test never released process()"
        with self.lock:
            self.seen[record.partition] += 1

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.held |= {tp.partition for tp in partitions}
            self.assignments += 1

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.held -= {tp.partition for tp in partitions}
            self.revoked += len(partitions)

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.held -= {tp.partition for tp in partitions}


class Running(InThread):
    """A worker's run() on a thread of its own, once its metrics server is bound."""

    def __init__(self, worker: Counted) -> None:
        super().__init__(worker)
        eventually(lambda: _bound(worker), WAIT, "the metrics server to be bound")

    @property
    def port(self) -> int:
        address = self.worker.metrics_address
        assert address is not None
        return address[1]

    def stop(self, timeout: float = WAIT) -> RunSummary:
        """Let a stuck process() go, stop() the worker and wait (bounded) for run()."""
        self.worker.release.set()
        return super().stop(timeout)


def _bound(worker: GroupConsumer) -> None:
    assert worker.metrics_address is not None


def test_group_metrics_follow_members_joining_and_leaving(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_batched_topic(bootstrap, topic, {0: [100], 1: [100], 2: [100]}, VALUE)
    a = Running(Counted(bootstrap_servers=bootstrap, group_id=group, topics=[topic]))
    address = a.worker.metrics_address
    assert address is not None and address[0] == "0.0.0.0" and address[1] > 0

    def a_alone() -> float:
        w = a.worker
        with w.lock:
            seen, held, assignments = sum(w.seen.values()), set(w.held), w.assignments
        assert seen == 300 and held == {0, 1, 2}
        s = scrape(a.port)
        assert value(s, "groupkit_records_consumed_total", group=group, topic=topic) == 300
        assert value(s, "groupkit_bytes_consumed_total", group=group, topic=topic) > 300 * 50
        assert value(s, "groupkit_assigned_partitions", group=group, topic=topic) == 3
        assert value(s, "groupkit_rebalances_total", group=group, result="ok") == assignments
        for p in range(3):
            assert value(s, "groupkit_consumer_lag_records", group=group, topic=topic,
                         partition=str(p)) == ends[p] - w.seen[p] == 0
            assert value(s, "groupkit_consumer_lag_seconds", group=group, topic=topic,
                         partition=str(p)) == 0
        states = values(s, "groupkit_member_state", group=group)
        assert {dict(k)["state"]: v for k, v in states.items() if v} == {"STABLE": 1}
        # Every state of either group protocol: the classic 9 and the 7 only KIP-848 has.
        assert len(states) == 16
        generation = value(s, "groupkit_generation", group=group)
        assert generation is not None
        for stamp in ("last_poll", "last_heartbeat", "last_rebalance"):
            at = value(s, f"groupkit_{stamp}_timestamp_seconds", group=group)
            assert at is not None and time.time() - 30 < at <= time.time(), stamp
        assert value(s, "groupkit_heartbeat_duration_seconds_count", group=group) > 0
        assert value(s, "groupkit_join_duration_seconds_count", group=group) >= 1
        assert sum(values(s, "groupkit_fetch_duration_seconds_count").values()) > 0
        assert value(s, "groupkit_process_duration_seconds_sum", group=group) > 0
        return generation

    first_generation = eventually(a_alone, WAIT, "worker a to consume everything and say so")
    assert healthz(a.port)[0] == 200

    b = Running(Counted(bootstrap_servers=bootstrap, group_id=group, topics=[topic]))
    try:
        def both_hold() -> None:
            with a.worker.lock, b.worker.lock:
                held_a, held_b = set(a.worker.held), set(b.worker.held)
                counts = (a.worker.assignments, b.worker.assignments)
            assert held_a and held_b and held_a | held_b == {0, 1, 2}
            assert not held_a & held_b
            sa, sb = scrape(a.port), scrape(b.port)
            for s, held, count in ((sa, held_a, counts[0]), (sb, held_b, counts[1])):
                assert value(s, "groupkit_assigned_partitions", group=group,
                             topic=topic) == len(held)
                assert value(s, "groupkit_rebalances_total", group=group,
                             result="ok") == count
                assert value(s, "groupkit_member_state", group=group, state="STABLE") == 1
            generation = value(sa, "groupkit_generation", group=group)
            assert generation == value(sb, "groupkit_generation", group=group)
            assert generation > first_generation
            with Admin(bootstrap_servers=bootstrap) as admin:
                described = admin.describe_groups([group])[group]
            assert described.state == "Stable" and len(described.members) == 2

        eventually(both_hold, WAIT, "a and b to share the partitions, as their metrics say")
        assert healthz(b.port)[0] == 200
        def b_counted() -> None:
            # None, unless a's commits on revoke were lost: as many as b processed.
            with b.worker.lock:
                b_seen = sum(b.worker.seen.values())
            assert (value(scrape(b.port), "groupkit_records_consumed_total", group=group,
                          topic=topic) or 0) == b_seen

        eventually(b_counted, WAIT, "b's count of records to match what it processed")
    finally:
        b.stop()
    assert b.worker.metrics_address is None, "the server stops with run()"

    def a_alone_again() -> None:
        with a.worker.lock:
            held, assignments, revoked = set(a.worker.held), a.worker.assignments, \
                a.worker.revoked
        assert held == {0, 1, 2}
        s = scrape(a.port)
        assert value(s, "groupkit_assigned_partitions", group=group, topic=topic) == 3
        assert value(s, "groupkit_rebalances_total", group=group, result="ok") == assignments
        assert value(s, "groupkit_partitions_revoked_total", group=group) == revoked
        assert value(s, "groupkit_member_state", group=group, state="STABLE") == 1
        assert value(s, "groupkit_rebalance_callback_duration_seconds_count", group=group,
                     callback="on_assigned") == assignments

    eventually(a_alone_again, WAIT, "a to take every partition back after b left")
    assert a.worker.assignments >= 3
    a.stop()


def test_lag_is_log_end_minus_position(kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic = kafka_broker.bootstrap_servers, unique_name("t")
    ends = make_batched_topic(bootstrap, topic, {0: [120], 1: [90]}, VALUE)
    metrics = PrometheusMetrics()
    consumed: collections.Counter[int] = collections.Counter()
    oldest_seen: dict[int, int] = {}
    with Consumer(bootstrap_servers=bootstrap, hooks=[metrics], max_poll_records=7,
                  auto_offset_reset="earliest") as consumer, \
            serve(metrics.registry, 0, host="127.0.0.1") as server:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(tps)
        deadline = time.monotonic() + WAIT
        # Poll drains one partition's answer before the next (as Java's does), so each
        # partition is read alone, the other paused, to leave both with a lag.
        for p in (0, 1):
            consumer.pause([tps[1 - p]])
            consumer.resume([tps[p]])
            while consumed[p] < 20:
                assert time.monotonic() < deadline, f"only {consumed} records came"
                for record in consumer.poll(0.5):
                    consumed[record.partition] += 1
                    oldest_seen[record.partition] = record.timestamp
        # The application stops consuming (it pauses and polls on, as the poll reports progress
        # at most every 0.1 s); the truth: log end (from the producer) minus position.
        consumer.pause(consumer.assignment())
        assert consumer.poll(0.2) == []
        positions = {p: consumer.position(TopicPartition(topic, p)) for p in (0, 1)}
        assert positions == {p: consumed[p] for p in (0, 1)}
        s = scrape(server.address[1])
        scraped_at = time.time()
        for p in (0, 1):
            lag = ends[p] - positions[p]
            assert lag > 0
            assert value(s, "groupkit_consumer_lag_records", group="", topic=topic,
                         partition=str(p)) == lag
            seconds = value(s, "groupkit_consumer_lag_seconds", group="", topic=topic,
                            partition=str(p))
            assert seconds is not None
            assert 0 < seconds <= scraped_at - oldest_seen[p] / 1000 + 0.001
        assert value(s, "groupkit_records_consumed_total", group="", topic=topic) == sum(
            consumed.values())
        # No group: no member state, and /healthz is not configured on this server.
        assert not values(s, "groupkit_member_state")
        assert healthz(server.address[1])[0] == 404


def test_healthz_turns_503_when_the_application_stops_polling(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 1)
    worker = Counted(bootstrap_servers=bootstrap, group_id=group, topics=[topic],
                     max_poll_interval_ms=3000)
    worker.release.clear()
    running = Running(worker)
    try:
        def healthy() -> None:
            code, body = healthz(running.port)
            assert code == 200 and body["status"] == "ok", body
            # The group shows up in /healthz once the worker's member exists: until then, wait.
            assert body["groups"].get(group, {}).get("state") == "STABLE", body

        eventually(healthy, WAIT, "the worker to join and report healthy")
        write_batches(bootstrap, topic, {0: [1]}, VALUE)
        assert worker.stuck.wait(WAIT), "process() never got the record"

        def unhealthy() -> dict[str, Any]:
            code, body = healthz(running.port)
            assert code == 503, body
            return body

        body = eventually(unhealthy, WAIT, "/healthz to turn 503 while process() is stuck")
        # The last poll started at most its 0.2 s timeout (plus scheduling) before process().
        assert time.monotonic() - worker.stuck_at >= 2.0, "503 came before max_poll_interval_ms"
        assert body["status"] == "unhealthy"

        def says_why() -> None:
            reason = unhealthy()["reason"]
            assert "the application has not polled again" in reason
            assert "max_poll_interval_ms (3000 ms)" in reason

        # The member's poll timer (from poll's start) may expire a moment before the health
        # check's (from poll's return): both reasons come, in either order.
        eventually(says_why, WAIT, "/healthz to say the application stopped polling")

        def left_the_group() -> None:
            s = scrape(running.port)
            assert value(s, "groupkit_member_state", group=group, state="UNJOINED") == 1
            assert value(s, "groupkit_member_state", group=group, state="STABLE") == 0
            assert "is not a member of its group" in healthz(running.port)[1]["reason"]

        eventually(left_the_group, WAIT, "the member to leave when its poll interval expired")
        worker.release.set()
        eventually(healthy, WAIT, "the worker to rejoin and report healthy again")
    finally:
        running.stop()
