"""Every public call given a timeout returns within it (+0.5 s), whatever the cluster does.

The faults are real: the broker process is killed (connections refused at once) or stopped with
SIGSTOP (the kernel still accepts connections, nothing answers: the slow failure). Each test
owns its broker, since it breaks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import Consumer
from groupkit.errors import GroupkitError, RequestTimeoutError
from groupkit.producer import Producer
from groupkit.testing import LocalBroker
from tests.support.broker_data import make_topic
from tests.support.broker_faults import freeze, thaw
from tests.support.peers import FAST_GROUP
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker

#: The issue's bound: a call returns or raises within its timeout plus this.
SLACK = 0.5


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    try:
        outcome: Any = call()
    except GroupkitError as exc:
        outcome = exc
    return time.monotonic() - started, outcome


def joined_consumer(broker: LocalBroker, topic: str) -> Consumer:
    make_topic(broker.bootstrap_servers, topic, 2, 20)
    consumer = Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{topic}",
                        auto_offset_reset="earliest", **FAST_GROUP)
    consumer.subscribe([topic])
    got: list[Any] = []
    wait_for(lambda: len(got) >= 20, 45, "20 records", lambda: got.extend(consumer.poll(0.5)))
    consumer.commit(timeout=10)
    return consumer


def fault(broker: LocalBroker, kind: str) -> None:
    if kind == "killed":
        broker.stop()
    else:
        freeze(broker)


@pytest.mark.parametrize("kind", ["killed", "stopped"])
def test_consumer_calls_keep_their_deadline_when_the_broker_fails(
        broker: LocalBroker, unique_name: Callable[[str], str], kind: str) -> None:
    topic = unique_name("deadline")
    consumer = joined_consumer(broker, topic)
    tp = TopicPartition(topic, 0)
    fault(broker, kind)
    took, outcome = timed(lambda: consumer.committed([tp], timeout=2))
    assert took < 2 + SLACK and isinstance(outcome, RequestTimeoutError), (took, outcome)
    took, outcome = timed(lambda: consumer.commit({tp: 5}, timeout=2))
    assert took < 2 + SLACK and isinstance(outcome, RequestTimeoutError), (took, outcome)
    assert "rebalancing" not in str(outcome), "a dead coordinator is not a rebalance"
    took, outcome = timed(lambda: consumer.close(timeout=3))
    assert took < 3 + SLACK and outcome is None, (took, outcome)


@pytest.mark.parametrize("kind", ["killed", "stopped"])
def test_producer_calls_keep_their_deadline_when_the_broker_fails(
        broker: LocalBroker, unique_name: Callable[[str], str], kind: str) -> None:
    topic = unique_name("deadline")
    producer = Producer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=1500)
    producer.send(topic, b"warm").result(30)
    fault(broker, kind)
    took, outcome = timed(lambda: producer.send(unique_name("new"), b"x").exception(5))
    assert took < 1.5 + SLACK and isinstance(outcome, GroupkitError), (took, outcome)
    producer.send(topic, b"queued")
    took, outcome = timed(lambda: producer.flush(timeout=2))
    assert took < 2 + SLACK and isinstance(outcome, RequestTimeoutError), (took, outcome)
    took, outcome = timed(lambda: producer.close(timeout=2))
    assert took < 2 + SLACK and outcome is None, (took, outcome)


def test_committed_answers_again_once_the_broker_resumes(
        broker: LocalBroker, unique_name: Callable[[str], str]) -> None:
    topic = unique_name("deadline")
    consumer = joined_consumer(broker, topic)
    tp = TopicPartition(topic, 0)
    fault(broker, "stopped")
    _, outcome = timed(lambda: consumer.committed([tp], timeout=1))
    assert isinstance(outcome, RequestTimeoutError)
    thaw(broker)
    try:
        committed = consumer.committed([tp], timeout=30)
        found = committed[tp]
        assert found is not None and found.offset > 0
    finally:
        consumer.close(timeout=5)


@pytest.mark.parametrize("kind", ["killed", "stopped"])
def test_poll_keeps_its_timeout_across_auto_commits_when_the_broker_fails(
        broker: LocalBroker, unique_name: Callable[[str], str], kind: str) -> None:
    topic = unique_name("deadline")
    make_topic(broker.bootstrap_servers, topic, 2, 20)
    consumer = Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{topic}",
                        auto_offset_reset="earliest", auto_commit_interval_ms=300, **FAST_GROUP)
    consumer.subscribe([topic])
    got: list[Any] = []
    wait_for(lambda: len(got) >= 20, 45, "20 records", lambda: got.extend(consumer.poll(0.5)))
    fault(broker, kind)
    slowest = 0.0
    until = time.monotonic() + 8.0  # many auto-commits, past the session timeout
    while time.monotonic() < until:
        took, outcome = timed(lambda: consumer.poll(0.5))
        assert outcome == [], outcome
        slowest = max(slowest, took)
    assert slowest < 0.5 + SLACK, slowest
    took, outcome = timed(lambda: consumer.close(timeout=2))
    assert took < 2 + SLACK and outcome is None, (took, outcome)


@pytest.mark.parametrize("kind", ["killed", "stopped"])
def test_admin_calls_keep_their_deadline_when_the_broker_fails(
        broker: LocalBroker, unique_name: Callable[[str], str], kind: str) -> None:
    # request_timeout_ms stays at its 30 s default: only the call's timeout can end these.
    topic = unique_name("deadline")
    consumer = joined_consumer(broker, topic)
    consumer.close(timeout=10)
    admin = Admin(bootstrap_servers=broker.bootstrap_servers)
    tp = TopicPartition(topic, 0)
    calls: dict[str, Callable[[], Any]] = {
        "describe_groups": lambda: admin.describe_groups([f"g-{topic}"], timeout=2),
        "list_group_offsets": lambda: admin.list_group_offsets(f"g-{topic}", timeout=2),
        "list_groups": lambda: admin.list_groups(timeout=2),
        "list_offsets": lambda: admin.list_offsets({tp: "latest"}, timeout=2),
        "log_end_offsets": lambda: admin.log_end_offsets([tp], timeout=2),
        "alter_consumer_group_offsets": lambda: admin.alter_consumer_group_offsets(
            f"g-{topic}", {tp: 1}, timeout=2),
        "create_topics": lambda: admin.create_topics([unique_name("new")], timeout=2),
    }
    # A frozen broker leaves only the deadline; a dead one may be named sooner.
    expected = RequestTimeoutError if kind == "stopped" else GroupkitError
    try:
        fault(broker, kind)
        for name, call in calls.items():
            took, outcome = timed(call)
            assert took < 2 + SLACK and isinstance(outcome, expected), (name, took, outcome)
    finally:
        admin.close()
