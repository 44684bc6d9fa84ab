"""/healthz and the member-state gauge of one GroupConsumer with ``group_protocol="consumer"``
(KIP-848), on confluent-kafka's mock cluster, scraped over HTTP: healthy once STABLE; when
process() stops returning, 503 after max_poll_interval_ms, then the member leaves its group
(STALE, as Java's ConsumerMembershipManager does when the poll timer expires) and /healthz
says so; once process() returns, the member rejoins and is healthy again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from tests.support.group_workers import InThread
from tests.support.metrics_scrape import healthz, scrape, value
from tests.support.mock_cluster import MockCluster
from tests.support.waits import eventually

WAIT = 30.0


@pytest.fixture
def mock() -> Iterator[MockCluster]:
    with MockCluster(heartbeat_interval_ms=300) as cluster:
        yield cluster


class Stuck(GroupConsumer):
    """Blocks in process() until ``release`` is set."""

    auto_offset_reset = "earliest"
    metrics_port = 0

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.stuck = threading.Event()
        self.stuck_at = 0.0
        self.release = threading.Event()

    def process(self, record: ConsumerRecord) -> None:
        if not self.release.is_set():
            self.stuck_at = time.monotonic()
            self.stuck.set()
            assert self.release.wait(WAIT), "the test never released process()"


def test_healthz_follows_a_consumer_protocol_member_that_stops_polling(
        mock: MockCluster) -> None:
    topic, group = "health-kip848", "health-kip848"
    mock.create_topic(topic, 1)
    worker = Stuck(bootstrap_servers=mock.bootstrap_servers, group_id=group, topics=[topic],
                   group_protocol="consumer", max_poll_interval_ms=3000)
    running = InThread(worker)
    try:
        eventually(lambda: _assert(worker.metrics_address is not None), WAIT,
                   "the metrics server to be bound")
        assert worker.metrics_address is not None
        port = worker.metrics_address[1]

        def healthy() -> None:
            code, body = healthz(port)
            assert code == 200 and body["status"] == "ok", body
            assert body["groups"].get(group, {}).get("state") == "STABLE", body
            s = scrape(port)
            assert value(s, "groupkit_member_state", group=group, state="STABLE") == 1
            assert (value(s, "groupkit_generation", group=group) or 0) > 0

        eventually(healthy, WAIT, "the member to join and report healthy")
        mock.produce(topic, [b"one"], partitions=1)
        assert worker.stuck.wait(WAIT), "process() never got the record"

        def left() -> dict[str, Any]:
            code, body = healthz(port)
            assert code == 503, body
            assert "is not a member of its group" in body["reason"], body
            s = scrape(port)
            assert value(s, "groupkit_member_state", group=group, state="STALE") == 1
            assert value(s, "groupkit_member_state", group=group, state="STABLE") == 0
            return body

        eventually(left, WAIT, "the member to leave when its poll interval expired")
        # The poll that handed the record over started at most its wait (plus scheduling)
        # before process(); the member's poll timer runs from that start.
        assert time.monotonic() - worker.stuck_at >= 2.0, "left before max_poll_interval_ms"

        def both_reasons() -> None:
            reason = left()["reason"]
            assert "the application has not polled again" in reason
            assert "max_poll_interval_ms (3000 ms)" in reason

        # The member's timer (from poll's start) expires a moment before the health check's
        # (from poll's return): the second reason joins the first.
        eventually(both_reasons, WAIT, "/healthz to say the application stopped polling")
        worker.release.set()
        eventually(healthy, WAIT, "the member to rejoin and report healthy again")
    finally:
        worker.release.set()
        running.stop(WAIT)


def _assert(condition: bool) -> None:
    assert condition
