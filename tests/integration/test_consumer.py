"""groupkit.Consumer against a real broker (LocalBroker): groups, commits, pauses, expiry."""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

import pytest

from assignors import RebalanceProtocol, TopicPartition
from groupkit.consumer import Consumer, ConsumerRebalanceListener
from groupkit.errors import CommitFailedError, IllegalStateError, NoOffsetForPartitionError
from groupkit.hooks import HeartbeatAnswered, RebalanceStarted
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from groupkit.values import OffsetAndMetadata
from tests.support.broker_data import make_topic, produce
from tests.support.peers import FAST_GROUP, GroupkitMember, owned_exactly_once
from tests.support.waits import wait_for

TP = TopicPartition


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("revoked", partitions))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("assigned", partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("lost", partitions))


def group_consumer(bootstrap: str, group: str, **settings: Any) -> Consumer:
    options: dict[str, Any] = {"auto_offset_reset": "earliest", **FAST_GROUP, **settings}
    return Consumer(bootstrap_servers=bootstrap, group_id=group, **options)


def drain(consumer: Consumer, want: int, timeout: float = 20) -> list[Any]:
    got: list[Any] = []
    wait_for(lambda: len(got) >= want, timeout, f"{want} records",
             step=lambda: got.extend(consumer.poll(0.2)))
    return got


def test_single_member_consumes_everything_and_commits(kafka_broker: LocalBroker,  # noqa: F811
                                                       unique_name, caplog) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("one"), unique_name("g")
    produced = make_topic(bootstrap, topic, 3, 200)
    seen: list[Any] = []

    def broken_hook(event: Any) -> None:
        seen.append(event)
        raise RuntimeError("a broken metrics hook")

    caplog.set_level(logging.ERROR, logger="groupkit.hooks")
    consumer = group_consumer(bootstrap, group, enable_auto_commit=False, hooks=[broken_hook])
    listener = Recorder()
    try:
        consumer.subscribe([topic], listener=listener)
        records = drain(consumer, 200)
        assert Counter(r.value for r in records) == Counter(produced)
        assert {r.topic for r in records} == {topic}
        assert consumer.assignment() == {TP(topic, p) for p in range(3)}
        assert listener.calls == [("assigned", consumer.assignment())]
        consumer.commit()
        ends = {tp: consumer.position(tp) for tp in consumer.assignment()}
        assert sum(ends.values()) == 200
        assert consumer.committed(consumer.assignment()) == {
            tp: OffsetAndMetadata(end) for tp, end in ends.items()}
        answers: list[Any] = []
        consumer.commit_async({TP(topic, 0): 1}, callback=lambda o, e: answers.append((o, e)))
        wait_for(lambda: answers, 10, "the async commit callback", step=lambda: consumer.poll(0.1))
        assert answers == [({TP(topic, 0): 1}, None)]
        assert consumer.committed([TP(topic, 0)]) == {TP(topic, 0): OffsetAndMetadata(1)}
    finally:
        consumer.close(10)
    # The hook raised on every event, yet the runner and fetcher carried on (and logged it).
    assert any(isinstance(e, RebalanceStarted) for e in seen)
    assert "hook" in caplog.text


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_members_share_partitions_exactly_once(kafka_broker: LocalBroker,  # noqa: F811
                                                     unique_name, strategy: str) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("share"), unique_name("g")
    produced = make_topic(bootstrap, topic, 6, 300)
    every = {TP(topic, p) for p in range(6)}
    members = [GroupkitMember(bootstrap, group, [topic], strategy, f"gk-{i}", auto_commit=True) for i in range(3)]
    try:
        members[0].start()
        wait_for(lambda: members[0].snapshot()[1] == every, 30, "the first member to own all")
        for member in members[1:]:
            member.start()
        wait_for(lambda: owned_exactly_once(members, every), 40, "three-way ownership")
        produce(bootstrap, topic, range(300, 360))
        expected = produced | {str(i).encode() for i in range(300, 360)}
        wait_for(lambda: {v for m in members for v in m.snapshot()[0]} >= expected, 30,
                 "every record")
    finally:
        for member in members:
            member.stop()
    values = [v for m in members for v in m.snapshot()[0]]
    # Commit before revoke (auto commit on): a handed-over partition resumes where it stopped.
    assert Counter(values) == Counter(expected)


def test_cooperative_member_keeps_its_partitions_through_a_rebalance(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("coop"), unique_name("g")
    make_topic(bootstrap, topic, 4, 40)
    started: list[RebalanceStarted] = []
    first = group_consumer(bootstrap, group, assignors=["cooperative-sticky"],
                           enable_auto_commit=False,
                           hooks=[lambda e: started.append(e) if isinstance(
                               e, RebalanceStarted) else None])
    second = group_consumer(bootstrap, group, assignors=["cooperative-sticky"],
                            enable_auto_commit=False)
    one, two = Recorder(), Recorder()
    every = {TP(topic, p) for p in range(4)}
    try:
        first.subscribe([topic], listener=one)
        assert first.rebalance_protocol is RebalanceProtocol.COOPERATIVE
        drain(first, 40)
        assert len(started) == 1
        second.subscribe([topic], listener=two)
        # The coordinator holds the first member's JoinGroup (for seconds on the local broker)
        # while the group prepares; the partitions it keeps can be committed meanwhile.
        wait_for(lambda: len(started) == 2, 20, "the first member to rejoin",
                 lambda: first.poll(0.05))
        kept = first.assignment()
        first.commit()
        assert first.committed(kept) == {tp: OffsetAndMetadata(first.position(tp)) for tp in kept}

        def step() -> None:
            first.poll(0.05)
            second.poll(0.05)

        def split() -> bool:
            a, b = first.assignment(), second.assignment()
            return len(a) == len(b) == 2 and a | b == every

        wait_for(split, 40, "a two-and-two split", step)

        def committed_by_both() -> bool:
            try:
                first.commit()
                second.commit()
            except CommitFailedError:
                step()
                return False
            return True

        # Once the group settles, each member's commits succeed.
        wait_for(committed_by_both, 20, "both members to commit")
    finally:
        first.close(10)
        second.close(10)
    kinds = [kind for kind, _ in one.calls]
    # Only what moved was revoked, never the whole assignment, and nothing was lost.
    assert kinds[:2] == ["assigned", "revoked"]
    moved = one.calls[1][1]
    assert moved and moved < every and "lost" not in kinds
    assert set().union(*(p for k, p in two.calls if k == "assigned")) == moved


def test_heartbeats_keep_the_session_through_a_long_processing_pause(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("pause"), unique_name("g")
    make_topic(bootstrap, topic, 2, 10)
    events: list[Any] = []
    consumer = group_consumer(bootstrap, group, hooks=[events.append])
    listener = Recorder()
    try:
        consumer.subscribe([topic], listener=listener)
        drain(consumer, 10)
        member = consumer.member_id
        before = len(events)
        cpu = time.process_time()
        time.sleep(FAST_GROUP["session_timeout_ms"] / 1000 * 1.3)  # the application is busy
        idle_cpu = time.process_time() - cpu
        during = events[before:]
        produce(bootstrap, topic, range(10, 15))
        assert len(drain(consumer, 5)) == 5
        assert consumer.member_id == member
    finally:
        consumer.close(10)
    answered = [e for e in during if isinstance(e, HeartbeatAnswered)]
    assert len(answered) >= 8 and all(e.error_code == 0 for e in answered)
    assert not any(isinstance(e, RebalanceStarted) for e in during)
    # Heartbeats and long-poll fetches went on, yet the idle process used almost no CPU: the
    # background threads sleep until their next deadline instead of spinning.
    assert idle_cpu < 0.5, idle_cpu


def test_max_poll_interval_expiry_leaves_and_rejoins(kafka_broker: LocalBroker,  # noqa: F811
                                                     unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("expiry"), unique_name("g")
    make_topic(bootstrap, topic, 4, 20)
    every = {TP(topic, p) for p in range(4)}
    slow = group_consumer(bootstrap, group, max_poll_interval_ms=4000, enable_auto_commit=False)
    steady = group_consumer(bootstrap, group)
    lost = Recorder()
    try:
        slow.subscribe([topic], listener=lost)
        steady.subscribe([topic])

        def both() -> None:
            slow.poll(0.05)
            steady.poll(0.05)

        wait_for(lambda: slow.assignment() and steady.assignment(), 40, "both members", both)
        held = slow.assignment()
        # The slow member stops polling; its runner leaves and the steady one takes over.
        wait_for(lambda: steady.assignment() == every, 40, "the takeover",
                 lambda: steady.poll(0.1))
        with pytest.raises(CommitFailedError):
            slow.commit({tp: 1 for tp in held})
        wait_for(lambda: ("lost", held) in lost.calls and slow.assignment()
                 and steady.assignment() != every, 40, "the slow member to rejoin", both)
    finally:
        slow.close(10)
        steady.close(10)


def test_one_poll_longer_than_the_poll_interval_keeps_the_member(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    # Java's poll restarts the poll timer each time its wait ends (coordinator.poll in the
    # loop), so a poll(Duration) longer than max.poll.interval.ms does not expire the member.
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("long-poll"), unique_name("g")
    make_topic(bootstrap, topic, 2, 0)
    events: list[Any] = []
    consumer = group_consumer(bootstrap, group, max_poll_interval_ms=3000, hooks=[events.append])
    listener = Recorder()
    try:
        consumer.subscribe([topic], listener=listener)
        wait_for(lambda: consumer.assignment(), 40, "the assignment",
                 lambda: consumer.poll(0.1))
        member, held = consumer.member_id, consumer.assignment()
        calls, before = len(listener.calls), len(events)
        assert consumer.poll(7.0) == []  # more than twice max_poll_interval_ms
        assert consumer.member_id == member
        assert consumer.assignment() == held
        assert listener.calls[calls:] == []
        assert not any(isinstance(e, RebalanceStarted) for e in events[before:])
    finally:
        consumer.close(10)


def test_seek_pause_resume_with_manual_assignment(kafka_broker: LocalBroker,  # noqa: F811
                                                  unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("seek")
    make_topic(bootstrap, topic, 1, 0)
    produce(bootstrap, topic, range(10))
    tp = TP(topic, 0)
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        with pytest.raises(IllegalStateError):
            consumer.subscribe([topic])
        assert [r.offset for r in drain(consumer, 10)] == list(range(10))
        assert consumer.position(tp) == 10
        consumer.seek(tp, 7)
        assert [r.value for r in drain(consumer, 3)] == [b"7", b"8", b"9"]
        consumer.pause([tp])
        assert consumer.paused() == {tp}
        for i in range(10, 13):
            # One batch each: Tansu 0.6 answers ListOffsets(latest) with the last batch's base
            # offset + 1, so multi-record batches would make seek_to_end land short.
            produce(bootstrap, topic, [i])
        assert consumer.poll(1.0) == []
        consumer.resume([tp])
        assert [r.value for r in drain(consumer, 3)] == [b"10", b"11", b"12"]
        consumer.seek_to_beginning()
        assert drain(consumer, 1)[0].offset == 0
        consumer.seek_to_end()
        assert consumer.position(tp) == 13
    finally:
        consumer.close(5)


def test_auto_offset_reset_none_raises_a_clear_error(kafka_broker: LocalBroker,  # noqa: F811
                                                     unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("none")
    make_topic(bootstrap, topic, 1, 3)
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=unique_name("g"),
                        auto_offset_reset="none")
    try:
        consumer.assign([TP(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError, match="seek"):
            wait_for(lambda: False, 10, "the error", step=lambda: consumer.poll(0.2))
    finally:
        consumer.close(5)


def test_close_is_bounded_and_leaves_the_group(kafka_broker: LocalBroker,  # noqa: F811
                                               unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("close"), unique_name("g")
    make_topic(bootstrap, topic, 2, 10)
    # A long session: taking over within it shows the leaver said goodbye (no expiry wait).
    slow_expiry = {"session_timeout_ms": 12000, "heartbeat_interval_ms": 500}
    leaving = group_consumer(bootstrap, group, **slow_expiry)
    staying = group_consumer(bootstrap, group, **slow_expiry)
    try:
        leaving.subscribe([topic])
        staying.subscribe([topic])

        def both() -> None:
            leaving.poll(0.05)
            staying.poll(0.05)

        wait_for(lambda: leaving.assignment() and staying.assignment(), 60, "both members", both)
        started = time.monotonic()
        leaving.close(5)
        assert time.monotonic() - started < 5
        with pytest.raises(IllegalStateError):
            leaving.poll(0)
        wait_for(lambda: len(staying.assignment()) == 2, 11.5, "the takeover",
                 lambda: staying.poll(0.1))
    finally:
        leaving.close(5)
        staying.close(10)
