"""``connections_max_idle_ms`` as the clients use it, against the local Tansu broker: an idle
Admin's and Producer's connections are closed, at the broker too, and the next call reconnects;
a Consumer's long poll keeps its fetch connection while its idle ones close; a group member
with a small setting keeps consuming across several idle periods with no rejoin and no
warning (its fetch and heartbeat stand on their connections, which are never idle)."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import Consumer
from groupkit.producer import Producer
from groupkit.runtime.cluster import FETCH, Cluster
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.group_runner import HEARTBEAT
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic, produce
from tests.support.group_workers import Board, InThread, Tally
from tests.support.tcp_ends import ends, open_ends
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker

#: Over the 300 ms of test_connection_idle.py: a member's fetch connection is idle from an
#: answer with records to the next Fetch, which a slow machine may stretch.
IDLE_MS = 500
WAIT = 30.0


def connected(cluster: Cluster) -> dict[tuple[int, str], BrokerConnection]:
    return {key: conn for key, conn in cluster._conns.items() if conn.connected}


def open_now(cluster: Cluster) -> set[tuple[int, int]]:
    """The ends of ``cluster``'s connections open now (one may close while they are read)."""
    found = set()
    for conn in connected(cluster).values():
        with contextlib.suppress(OSError):  # closed as idle meanwhile
            found.add(ends(conn))
    return found


def all_closed(caplog: pytest.LogCaptureFixture, noted: set[tuple[int, int]], what: str) -> None:
    """Wait until the connections ``noted`` open (all of them, if closed before they could be
    noted) are closed as idle, at the broker too."""
    wait_for(lambda: idle_closes(caplog) > 0 and not open_ends(noted), 10,
             f"{what} to close as idle")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def idle_closes(caplog: pytest.LogCaptureFixture) -> int:
    return sum(1 for r in caplog.records if "connections_max_idle_ms" in r.getMessage())


def test_an_idle_admins_connections_close_and_its_next_call_reconnects(
        kafka_broker: LocalBroker, unique_name, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    caplog.set_level(logging.INFO, logger="groupkit")
    topic = unique_name("idle-admin")
    with Admin(bootstrap_servers=kafka_broker.bootstrap_servers,
               connections_max_idle_ms=IDLE_MS) as admin:
        admin.create_topics([topic])
        assert topic in admin.list_topics()
        first = open_now(admin._cluster)
        all_closed(caplog, first, "the admin's connections")
        assert connected(admin._cluster) == {}
        assert topic in admin.list_topics()
        assert not open_now(admin._cluster) & first
    assert warnings(caplog) == []


def test_an_idle_producers_connections_close_and_its_next_send_reconnects(
        kafka_broker: LocalBroker, unique_name, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    caplog.set_level(logging.INFO, logger="groupkit")
    topic = unique_name("idle-producer")
    create_topic(kafka_broker.bootstrap_servers, topic, 1)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers,
                  connections_max_idle_ms=IDLE_MS) as producer:
        assert producer.send(topic, b"a").result(WAIT).offset == 0
        first = open_now(producer._cluster)
        all_closed(caplog, first, "the producer's connections")
        assert producer.send(topic, b"b").result(WAIT).offset == 1
        assert not open_now(producer._cluster) & first
    assert warnings(caplog) == []


def test_a_consumers_long_poll_keeps_its_fetch_connection_while_the_others_close(
        kafka_broker: LocalBroker, unique_name, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    caplog.set_level(logging.INFO, logger="groupkit")
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("idle-consumer")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [0])
    # Long polls of two idle periods: in flight, never idle.
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        fetch_max_wait_ms=2 * IDLE_MS, connections_max_idle_ms=IDLE_MS)
    got: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, 0)])
        wait_for(lambda: bool(got), WAIT, "the first record", step=lambda: got.extend(
            consumer.poll(0.1)))
        (fetch,) = [c for k, c in consumer._cluster._conns.items() if k[1] == FETCH]
        link, fetch_end = fetch._link, ends(fetch)  # a long poll always in flight
        wait_for(lambda: idle_closes(caplog) > 0, WAIT, "the consumer's idle connections to close")
        threading.Event().wait(2 * IDLE_MS / 1000)  # two idle periods more for the fetch one
        assert fetch._link is link and open_ends([fetch_end]) == {fetch_end}
        produce(bootstrap, topic, [1])
        wait_for(lambda: len(got) == 2, WAIT, "the second record", step=lambda: got.extend(
            consumer.poll(0.1)))
        assert [r.offset for r in got] == [0, 1] and fetch._link is link
    finally:
        consumer.close(5)
    assert warnings(caplog) == []


def test_a_group_member_keeps_consuming_across_idle_periods_without_rejoining(
        kafka_broker: LocalBroker, unique_name, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    caplog.set_level(logging.INFO, logger="groupkit")
    bootstrap, topic = kafka_broker.bootstrap_servers, unique_name("idle-group")
    create_topic(bootstrap, topic, 1)
    board = Board()
    # Heartbeats more often than the idle limit: a heartbeat stands only once two answers on
    # one socket were the same, so with an interval over the limit its socket would close
    # between heartbeats before it could stand (idle.py). Long polls of two idle periods.
    worker = Tally("idle", board, bootstrap_servers=bootstrap, group_id=unique_name("g"),
                   topics=[topic], connections_max_idle_ms=IDLE_MS, heartbeat_interval_ms=100,
                   fetch_max_wait_ms=2 * IDLE_MS)
    running = InThread(worker)
    try:
        sent = 0
        kept: dict[tuple[int, str], Any] = {}
        for round_ in range(3):
            produce(bootstrap, topic, range(sent, sent + 5))
            sent += 5
            board.wait(lambda n=sent: len(board.records) >= n, WAIT, f"round {round_}'s records")
            # Idle from here: wait until some connection of the member closed as idle, and
            # two idle periods more.
            closes = idle_closes(caplog)
            wait_for(lambda n=closes: idle_closes(caplog) > n, WAIT, "an idle connection to close")
            threading.Event().wait(2 * IDLE_MS / 1000)
            cluster = worker._consumer._cluster
            standing = {k: c._link for k, c in connected(cluster).items()
                        if k[1] in (FETCH, HEARTBEAT)}
            assert {k[1] for k in standing} == {FETCH, HEARTBEAT}
            for key, link in standing.items():  # the same sockets all along
                assert kept.setdefault(key, link) is link, f"{key} was closed"
        assert [kind for _, kind, _, _ in board.events] == ["assigned"]
        assert [(p, o) for _, p, o, _ in board.records] == [(0, o) for o in range(sent)]
    finally:
        running.stop(WAIT)
    assert warnings(caplog) == []
