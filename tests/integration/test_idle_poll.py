"""An idle poll (nothing to return, nothing finished) takes the consumer's signal lock and
looks at finished commits without a Python-level ``Condition.__enter__``/``__exit__`` pair:
an idle member polls several times a second."""

from __future__ import annotations

import threading

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic, produce


def test_an_idle_poll_enters_none_of_the_consumers_conditions(
        kafka_broker: LocalBroker, unique_name, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("idle-poll")
    make_topic(bootstrap, topic, 1, 0)
    produce(bootstrap, topic, [1])
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    entered: list[threading.Condition] = []
    enter = threading.Condition.__enter__

    def spy(cond: threading.Condition) -> bool:
        if threading.current_thread() is threading.main_thread():
            entered.append(cond)
        return enter(cond)

    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        for _ in range(100):
            got += consumer.poll(0.1)
            if got:
                break
        assert [r.offset for r in got] == [0]
        monkeypatch.setattr(threading.Condition, "__enter__", spy)
        for _ in range(5):
            assert consumer.poll(0.02) == []
        monkeypatch.undo()
        ours = [c for c in entered if c is consumer._signal or c is consumer._offsets._lock]
        assert ours == []
    finally:
        consumer.close(5)
