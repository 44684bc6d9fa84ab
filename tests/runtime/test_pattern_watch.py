"""A classic-protocol pattern subscription's matcher (groupkit.runtime.pattern_watch): whole-name
matches as Java's Pattern.matcher(topic).matches(), Kafka's internal topics left out, a new set
handed over only when it changed, and nothing after stop()."""

from __future__ import annotations

import queue
import re
import threading
from typing import Any

import pytest

from groupkit.config import ConsumerConfig
from groupkit.errors import ConfigError, KafkaConnectionError
from groupkit.runtime.metadata import ClusterMetadata, TopicInfo
from groupkit.runtime.pattern_watch import PatternWatch, compile_pattern, matching


def metadata(*names: str, internal: tuple[str, ...] = ()) -> ClusterMetadata:
    return ClusterMetadata(topics={n: TopicInfo(n, {}, is_internal=n in internal)
                                   for n in (*names, *internal)})


def test_a_pattern_matches_whole_names_and_never_internal_topics() -> None:
    found = matching(re.compile("orders-.*"), metadata(
        "orders-eu", "orders-us", "orders", "old-orders-eu", "__consumer_offsets",
        internal=("orders-internal",)))
    assert found == ["orders-eu", "orders-us"]
    assert matching(re.compile(".*"), metadata("a", "__transaction_state",
                                               "__share_group_state")) == ["a"]


def test_a_pattern_that_does_not_compile_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'a\\(' is not a regular expression"):
        compile_pattern("a(")


class Topics:
    """A cluster whose refresh answers the scripted listings in turn (raising an exception
    one), then the last one again and again."""

    def __init__(self, *answers: Any) -> None:
        self.config = ConsumerConfig(bootstrap_servers="h:1", retry_backoff_ms=10,
                                     retry_backoff_max_ms=20)
        self.answers = list(answers)
        self.lock = threading.Lock()
        self.asked = threading.Semaphore(0)

    def refresh(self, topics: Any = (), all_topics: bool = False,
                deadline: float | None = None) -> ClusterMetadata:
        assert all_topics
        self.asked.release()
        with self.lock:
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_each_new_set_is_handed_over_once_and_nothing_after_stop() -> None:
    cluster = Topics(metadata("a-1", "b"), KafkaConnectionError("down"), metadata("a-1", "b"),
                     metadata("a-1", "a-2"))
    got: queue.SimpleQueue[list[str]] = queue.SimpleQueue()
    watch = PatternWatch(cluster, re.compile("a-.*"), 0.01, got.put)  # type: ignore[arg-type]
    watch.start()
    try:
        assert got.get(timeout=10) == ["a-1"]
        # Not ["a-1"] again after the failure: the same set is not handed over twice.
        assert got.get(timeout=10) == ["a-1", "a-2"]
        for _ in range(5):  # it goes on asking, and the set stays as it is
            assert cluster.asked.acquire(timeout=10)
        assert got.empty()
    finally:
        watch.stop()
    with cluster.lock:
        cluster.answers = [metadata("a-3")]
    while cluster.asked.acquire(blocking=False):
        pass  # the asks made before stop()
    assert not cluster.asked.acquire(timeout=0.2)  # stopped (and joined): it asks no more
    assert got.empty()


def test_the_first_set_comes_also_when_nothing_matches() -> None:
    # The member joins with no topics then, as Java's does, and rejoins once one appears.
    cluster = Topics(metadata("b"))
    got: queue.SimpleQueue[list[str]] = queue.SimpleQueue()
    watch = PatternWatch(cluster, re.compile("a"), 60, got.put)  # type: ignore[arg-type]
    watch.start()
    try:
        assert got.get(timeout=10) == []
    finally:
        watch.stop()
