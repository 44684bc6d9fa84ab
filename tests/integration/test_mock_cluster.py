"""groupkit on the second real broker, librdkafka's mock cluster (inside confluent-kafka).

The mock advertises JoinGroup v6 and SyncGroup v4 but closes the connection on them (librdkafka
never sends them), so a member negotiating versions alone cannot join a classic group there.
Pinned to the release the mock speaks (``api_version="2.3"``), a groupkit member and a
confluent-kafka member share a classic group and both consume; without the pin the member stops
with one error that says what the broker did and which pin avoids it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

import pytest

from assignors import TopicPartition
from groupkit import Consumer
from groupkit.errors import RequestDroppedError
from tests.support.peers import (
    FAST_GROUP,
    ConfluentMember,
    GroupkitMember,
    Member,
    consumed,
    owned_exactly_once,
)
from tests.support.waits import wait_for

#: The mock creates a produced-to topic with this many partitions.
PARTITIONS = 4
RECORDS = 200

#: The mock waits a session timeout less 1 s for the members to rejoin on every membership
#: change (the latest joiner's), and expires a member waiting in JoinGroup by its own session
#: timeout (docs/test-brokers.md): both members get the same 3 s, so a rebalance takes 2 s and
#: nobody expires waiting for it.
MOCK_GROUP = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 300}
MOCK_GROUP_LIBRDKAFKA = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300}

pytestmark = pytest.mark.xdist_group("mock-cluster")


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[tuple[object, str]]:
    """A three-broker mock cluster (alive as long as its producer) and its bootstrap list."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 3, "bootstrap.servers": "",
                                         "log_level": 0})
    brokers = producer.list_topics(timeout=10).brokers.values()
    yield producer, ",".join(f"{b.host}:{b.port}" for b in brokers)
    producer.flush(5)


def produce(producer: object, topic: str, values: range) -> set[bytes]:
    for i in values:
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)  # type: ignore[attr-defined]
    assert producer.flush(10) == 0  # type: ignore[attr-defined]
    return {b"%d" % i for i in values}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_pinned_groupkit_member_and_a_confluent_member_share_a_classic_group(
        mock_cluster: tuple[object, str], strategy: str) -> None:
    producer, bootstrap = mock_cluster
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    wanted = produce(producer, topic, range(RECORDS))
    ours = GroupkitMember(bootstrap, group, [topic], strategy, "groupkit-1",
                          settings={"api_version": "2.3", **MOCK_GROUP})
    theirs = ConfluentMember(bootstrap, group, [topic], strategy, "confluent-1",
                             settings=MOCK_GROUP_LIBRDKAFKA)
    members: list[Member] = [ours, theirs]
    partitions = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    try:
        # The groupkit member joins first, so the mock makes it the leader of every generation
        # (its first member, as Kafka does). The other way round the mock may refuse groupkit's
        # SyncGroup (docs/test-brokers.md): it completes a generation as soon as the leader's
        # SyncGroup lands and answers a follower whose SyncGroup comes after that with
        # INVALID_REQUEST, where Kafka hands it its assignment.
        ours.start()
        wait_for(lambda: owned_exactly_once([ours], partitions), 30,
                 "the groupkit member holding every partition")
        theirs.start()
        wait_for(lambda: owned_exactly_once(members, partitions) and consumed(members) >= wanted,
                 60, "both members holding partitions and every record consumed")
        # Records produced now go to both members' partitions: each must consume its own.
        more = produce(producer, topic, range(RECORDS, RECORDS + 40))
        wait_for(lambda: consumed(members) >= wanted | more, 30, "the records produced later")
        held = [(m.name, *m.snapshot()) for m in members]
    finally:
        for member in members:
            member.stop()
    for name, values, owned in held:
        mine = {b"%d" % i for i in range(RECORDS, RECORDS + 40)
                if TopicPartition(topic, i % PARTITIONS) in owned}
        assert owned and mine and mine <= set(values), f"{name} did not consume its partitions"
    assert max(m.led for m in members) == 2, "the leader assigned to both members"


def test_without_the_pin_the_member_stops_once_saying_which_pin_to_use(
        mock_cluster: tuple[object, str], caplog: pytest.LogCaptureFixture) -> None:
    producer, bootstrap = mock_cluster
    topic = f"t-{uuid.uuid4().hex[:8]}"
    produce(producer, topic, range(10))
    caplog.set_level(logging.INFO, logger="groupkit")
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex[:8]}",
                        auto_offset_reset="earliest", **FAST_GROUP)
    raised: list[RequestDroppedError] = []

    def poll() -> None:
        try:
            consumer.poll(0.2)
        except RequestDroppedError as exc:
            raised.append(exc)

    started = time.monotonic()
    try:
        consumer.subscribe([topic])
        wait_for(lambda: bool(raised), 30, "the member to stop with RequestDroppedError", poll)
    finally:
        consumer.close(5)
    assert "closed the connection right after JoinGroup v6, 3 times in a row" in str(raised[0])
    assert "try api_version='2.3'" in str(raised[0])
    assert time.monotonic() - started < 15
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= 1, warnings
    closed = [r for r in caplog.records if "closed the connection" in r.getMessage()
              and r.name == "groupkit.runtime.reachability" and r.levelno >= logging.INFO]
    assert len(closed) == 1, [r.getMessage() for r in closed]


@pytest.mark.parametrize("pin", ["auto", "2.3"])
def test_commit_and_committed_work_on_the_mock_with_or_without_a_pin(
        mock_cluster: tuple[object, str], pin: str) -> None:
    # The mock's OffsetFetch stops at v6, which cannot carry require_stable: the flag is
    # dropped there as the Java consumer drops it (it raised FieldVersionError before).
    producer, bootstrap = mock_cluster
    topic = f"t-{uuid.uuid4().hex[:8]}"
    produce(producer, topic, range(8))
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer(bootstrap_servers=bootstrap, group_id=f"g-{uuid.uuid4().hex[:8]}",
                  api_version=pin, enable_auto_commit=False) as consumer:
        consumer.assign(tps)
        assert consumer.committed(tps, 10) == dict.fromkeys(tps)
        consumer.commit({tps[0]: 1, tps[1]: 2}, timeout=10)
        committed = consumer.committed(tps, 10)
        assert (committed[tps[0]].offset, committed[tps[1]].offset) == (1, 2)
        assert committed[tps[2]] is None
        assert consumer.position(tps[1], 10) == 2
