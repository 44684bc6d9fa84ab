"""Nothing fails silently: bad bootstrap lists, closed ports, broker outages and missing topics
each say what happened, once per change, in a log line an operator can act on and a hook event.

The outage is injected with a TCP proxy between the consumer and the real broker (the broker
itself keeps its data): the proxy is stopped, so connections are reset and refused, then
started again on the same port.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from groupkit.admin import Admin
from groupkit.consumer import Consumer
from groupkit.errors import ConfigError, NoBrokersAvailable
from groupkit.group_consumer import GroupConsumer
from groupkit.hooks import BrokerRecovered, BrokerUnreachable, Event, TopicMissing
from groupkit.producer import Producer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic, produce
from tests.support.peers import FAST_GROUP
from tests.support.recording_proxy import RecordingProxy
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Events:
    def __init__(self) -> None:
        self.seen: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.seen.append(event)

    def of(self, kind: type) -> list[Any]:
        with self.lock:
            return [e for e in self.seen if isinstance(e, kind)]


@pytest.mark.parametrize("client", [Consumer, Producer, Admin])
def test_a_bootstrap_list_where_no_host_resolves_fails_at_construction(client: type) -> None:
    with pytest.raises(ConfigError, match="no resolvable bootstrap urls.*no-such-host.invalid"):
        client(bootstrap_servers="no-such-host.invalid:9092,also-not.invalid:9092")


def test_an_unresolvable_host_among_resolvable_ones_is_warned_about_and_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    consumer = Consumer(bootstrap_servers=f"no-such-host.invalid:9092,127.0.0.1:{closed_port()}")
    consumer.close(1)
    assert any("no-such-host.invalid:9092 does not resolve" in r.getMessage()
               for r in caplog.records)


class Idle(GroupConsumer):
    topics = ["never-read"]
    group_id = "g-closed-port"

    def process(self, record: Any) -> None:
        raise AssertionError("no record can arrive")


def test_a_closed_port_warns_once_and_run_raises_no_brokers_available(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    address = f"127.0.0.1:{closed_port()}"
    events = Events()
    worker = Idle(bootstrap_servers=address, default_api_timeout_ms=3000, hooks=[events],
                  stop_grace_ms=2000)
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailable) as caught:
        worker.run()
    took = time.monotonic() - started
    assert 3.0 <= took < 3.0 + 2.0 + 1.0, took
    assert address in str(caught.value) and "Connection refused" in str(caught.value)
    warned = [r for r in caplog.records
              if r.levelno >= logging.WARNING and address in r.getMessage()
              and "unreachable" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]
    assert "Connection refused" in warned[0].getMessage()
    assert events.of(BrokerUnreachable) and all(e.broker == address
                                                for e in events.of(BrokerUnreachable))
    assert not [r for r in caplog.records if r.exc_info], "no traceback for an expected failure"


def test_an_outage_is_reported_once_per_change_and_the_group_recovers_by_itself(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str],  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    topic = unique_name("outage")
    make_topic(kafka_broker.bootstrap_servers, topic, 2, 20)
    host, port = kafka_broker.bootstrap_servers.rsplit(":", 1)
    proxy = RecordingProxy(host, int(port)).start()
    events = Events()
    consumer = Consumer(bootstrap_servers=proxy.bootstrap_servers, group_id=unique_name("g"),
                        auto_offset_reset="earliest", hooks=[events], **FAST_GROUP)
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        wait_for(lambda: len(got) >= 20, 45, "the first 20 records",
                 lambda: got.extend(r.value for r in consumer.poll(0.2)))
        proxy.stop()
        outage_from = len(caplog.records)
        deadline = time.monotonic() + 6.0  # longer than a session: the group is disrupted
        while time.monotonic() < deadline:
            got.extend(r.value for r in consumer.poll(0.2))
        during = caplog.records[outage_from:]
        assert not [r for r in during if r.levelno >= logging.ERROR or r.exc_info], \
            [r.getMessage() for r in during if r.levelno >= logging.ERROR or r.exc_info]
        unreachable = [r for r in during if "unreachable" in r.getMessage()]
        assert len(unreachable) == 1, [r.getMessage() for r in unreachable]
        fetching = [r for r in during if r.name == "groupkit.runtime.fetcher"
                    and r.levelno == logging.WARNING]
        assert len(fetching) <= 1, [r.getMessage() for r in fetching]
        assert events.of(BrokerUnreachable)

        proxy = RecordingProxy(host, int(port), listen_port=proxy.port).start()
        produce(kafka_broker.bootstrap_servers, topic, range(20, 40))
        wait_for(lambda: len(set(got)) >= 40, 60, "the records produced after the outage",
                 lambda: got.extend(r.value for r in consumer.poll(0.2)))
        assert events.of(BrokerRecovered)
        assert any("reachable again" in r.getMessage() for r in caplog.records[outage_from:])
    finally:
        consumer.close(5)
        proxy.stop()


def test_a_missing_subscribed_topic_is_warned_about_with_a_hook_event(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str],  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    topic = unique_name("absent")
    events = Events()
    consumer = Consumer(bootstrap_servers=kafka_broker.bootstrap_servers,
                        group_id=unique_name("g"), allow_auto_create_topics=False,
                        hooks=[events], **FAST_GROUP)
    try:
        consumer.subscribe([topic])
        wait_for(lambda: bool(events.of(TopicMissing)), 30, "a TopicMissing event",
                 lambda: consumer.poll(0.2))
    finally:
        consumer.close(5)
    assert events.of(TopicMissing)[0].topic == topic
    assert any(topic in r.getMessage() and "does not exist" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)
