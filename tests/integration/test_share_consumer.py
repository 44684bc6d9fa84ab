"""ShareConsumer (KIP-932) against real parts: confluent-kafka's mock cluster, alone and in one
share group with confluent-kafka's ShareConsumer; Tansu, which has no share-group APIs.

The mock gives each partition to one member, so every test starts its members and waits until
all four partitions are held before it produces. The groups read from the earliest offset
(share.auto.offset.reset, a group config: the default, latest, would drop records produced
before a partition's first fetch, which is a race in a test). Members commit before any of them closes: on the mock, a closing connection ends every
member's share sessions on that broker (a mock quirk, see tests/support/mock_cluster.py).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from prometheus_client import generate_latest

from groupkit import AcknowledgeType, ShareConsumer
from groupkit.errors import FeatureUnsupportedError, IllegalStateError, UnsupportedVersionError
from groupkit.hooks import HeartbeatSent, ShareRecordsAcquired
from groupkit.metrics import PrometheusMetrics
from tests.support.metrics_scrape import samples_of, value
from tests.support.mock_cluster import MockCluster
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("share-mock")

_names = itertools.count()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    # Heartbeats every 0.5 s (the mock's default is 5 s), so members hear of a join quickly.
    with MockCluster(share_auto_offset_reset="earliest",
                     share_heartbeat_interval_ms=500) as cluster:
        cluster.warm_producer()  # before any member: see tests/support/mock_cluster.py
        yield cluster


def spin(steps: list[Any], until: Any, timeout: float, what: str) -> None:
    """Poll every member in turn until ``until()`` holds (bounded)."""
    wait_for(until, timeout, what, step=lambda: [step() for step in steps])


def _topic(mock: MockCluster) -> tuple[str, str]:
    n = next(_names)
    topic = f"share-{n}-{time.monotonic_ns()}"
    mock.create_topic(topic)
    return topic, f"share-group-{n}-{time.monotonic_ns()}"


class Member:
    """One share member of either client, as the tests drive it: poll, remember, acknowledge."""

    def __init__(self, name: str, consumer: Any, groupkit: bool) -> None:
        self.name = name
        self.consumer = consumer
        self.groupkit = groupkit
        #: (partition, offset, value, delivery count) of every record delivered to it.
        self.got: list[tuple[int, int, bytes, int]] = []
        self.results: list[tuple[dict[Any, set[int]], Exception | None]] = []

    def poll(self, timeout: float = 0.05) -> list[Any]:
        records = self.consumer.poll(timeout)
        if not self.groupkit:
            records = [m for m in records if m.error() is None]
        for r in records:
            if self.groupkit:
                self.got.append((r.partition, r.offset, r.value, r.delivery_count))
            else:
                self.got.append((r.partition(), r.offset(), r.value(), r.delivery_count()))
        return records

    def holds(self) -> int:
        if self.groupkit:
            return len(self.consumer.assignment())
        return -1


def _groupkit(mock: MockCluster, group: str, name: str, **settings: Any) -> Member:
    consumer = ShareConsumer(bootstrap_servers=mock.bootstrap_servers, group_id=group,
                             client_id=name, fetch_max_wait_ms=100, **settings)
    member = Member(name, consumer, True)
    consumer.set_acknowledgement_commit_callback(
        lambda offsets, error: member.results.append((offsets, error)))
    return member


def _confluent(mock: MockCluster, group: str, name: str, **config: Any) -> Member:
    return Member(name, mock.share_consumer(group, name, **config), False)


def _joined(members: list[Member], topic: str, timeout: float = 20) -> None:
    """Poll everyone until the groupkit members hold partitions and every member has seen a
    heartbeat answer (the confluent ones cannot say what they hold)."""
    for m in members:
        m.consumer.subscribe([topic])
    start = time.monotonic()
    spin([m.poll for m in members], lambda: all(m.holds() != 0 for m in members)
         and time.monotonic() - start > 0.5, timeout, "the share group to form")


def _drain(members: list[Member], want: int, timeout: float = 30) -> None:
    spin([m.poll for m in members],
         lambda: len({(p, o) for m in members for p, o, _, _ in m.got}) >= want, timeout,
         f"{want} distinct records")


def _close(members: list[Member]) -> None:
    for m in members:
        if m.groupkit:
            m.consumer.commit_sync(10)
        else:
            m.consumer.commit_sync(10)
    for m in members:
        m.consumer.close()


def test_groupkit_members_get_every_record_once_and_accept_it(mock: MockCluster) -> None:
    topic, group = _topic(mock)
    members = [_groupkit(mock, group, f"gk-{i}") for i in range(2)]
    _joined(members, topic)
    # The first member learns of the second at its next heartbeat: wait for the split.
    spin([m.poll for m in members], lambda: sorted(
        tp.partition for m in members for tp in m.consumer.assignment()) == [0, 1, 2, 3], 10,
        "the two members to split the four partitions")
    sent = mock.produce(topic, (b"v%d" % i for i in range(300)))
    _drain(members, sent)
    # A second pass: nothing more comes (the implicit accept went with these polls).
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
    got = [(p, o) for m in members for p, o, _, _ in m.got]
    assert len(got) == len(set(got)) == sent
    assert {v for m in members for _, _, v, _ in m.got} == {b"v%d" % i for i in range(300)}
    assert all(count == 1 for m in members for *_, count in m.got)
    _close(members)
    accepted = sum(len(offs) for m in members for offsets, error in m.results if error is None
                   for offs in offsets.values())
    assert accepted == sent
    assert not [e for m in members for _, e in m.results if e is not None]


def test_groupkit_and_confluent_members_share_one_group(mock: MockCluster) -> None:
    topic, group = _topic(mock)
    members = [_confluent(mock, group, "ck-0"), _confluent(mock, group, "ck-1"),
               _groupkit(mock, group, "gk-0"), _groupkit(mock, group, "gk-1")]
    _joined(members, topic)
    # The mock hands each partition to one member; members that joined earlier learn of the
    # last join at their next heartbeat (5 s on the mock), so records are produced in rounds
    # until both clients have had some (every round counts for exactly-once).
    sent = 0
    deadline = time.monotonic() + 30
    while not (any(m.got for m in members if m.groupkit)
               and any(m.got for m in members if not m.groupkit)):
        assert time.monotonic() < deadline, "one client never got records"
        sent += mock.produce(topic, (b"m%d" % i for i in range(sent, sent + 100)))
        _drain(members, sent)
    got = [(p, o) for m in members for p, o, _, _ in m.got]
    assert len(got) == len(set(got)) == sent, "a record went to two members"
    assert {v for m in members for _, _, v, _ in m.got} == {b"m%d" % i for i in range(sent)}
    _close(members)
    assert not [e for m in members for _, e in m.results if e is not None]
    _nothing_left(mock, topic, group)


def _nothing_left(mock: MockCluster, topic: str, group: str) -> None:
    """Every record the group had was accepted: a new member alone in the group gets only
    the end marker produced to each partition now. A record not accepted (released, or
    still acquired by a member that left) would come back to it, from an offset below the
    markers, so no later than they do."""
    after = _groupkit(mock, group, "gk-after")
    try:
        after.consumer.subscribe([topic])
        wait_for(lambda: len(after.consumer.assignment()) == 4, 20,
                 "the new member to hold every partition", step=after.poll)
        mock.produce(topic, (b"end-%d" % p for p in range(4)))
        wait_for(lambda: len({v for *_, v, _ in after.got} & {b"end-%d" % p for p in range(4)})
                 == 4, 20, "the end marker of every partition", step=after.poll)
        assert sorted(v for _, _, v, _ in after.got) == [b"end-%d" % p for p in range(4)]
    finally:
        after.consumer.close(5)


def test_released_records_return_with_a_higher_count_and_rejected_never(
        mock: MockCluster) -> None:
    topic, group = _topic(mock)
    gk = _groupkit(mock, group, "gk-explicit", share_acknowledgement_mode="explicit")
    _joined([gk], topic)
    sent = mock.produce(topic, (b"r%d" % i for i in range(40)))
    fate: dict[tuple[int, int], AcknowledgeType] = {}

    def step() -> None:
        records = gk.poll()
        if records and not fate:
            # Explicit mode: every record of a poll is acknowledged before the next poll.
            with pytest.raises(IllegalStateError, match="not acknowledged"):
                gk.consumer.poll(0)
        for r in records:
            key = (r.partition, r.offset)
            if r.delivery_count == 1:
                fate[key] = (AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
                             AcknowledgeType.ACCEPT)[r.offset % 3]
                gk.consumer.acknowledge(r, fate[key])
            else:
                gk.consumer.acknowledge(r, AcknowledgeType.ACCEPT)

    released = lambda: {k for k, f in fate.items() if f is AcknowledgeType.RELEASE}  # noqa: E731
    spin([step], lambda: len(fate) == sent and all(
        (p, o, 2) in {(p2, o2, c) for p2, o2, _, c in gk.got} for p, o in released()), 30,
        "every record, and the released ones again")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        step()
    again = [(p, o, c) for p, o, _, c in gk.got if c > 1]
    assert {(p, o) for p, o, _ in again} == released()
    assert all(c == 2 for _, _, c in again)
    rejected = {k for k, f in fate.items() if f is AcknowledgeType.REJECT}
    assert rejected and not rejected & {(p, o) for p, o, _ in again}
    gk.consumer.close()
    _nothing_left(mock, topic, group)  # nor to another member, after this one left


def test_a_member_that_leaves_holding_records_loses_nothing(mock: MockCluster) -> None:
    """A member in explicit mode closes with a record of its last poll not acknowledged (and
    maybe others fetched but never handed over): the next member gets them, the delivered
    one with a higher delivery count, and never the ones accepted. (groupkit releases them
    on close; the mock also releases a leaving member's records by itself, so this shows the
    outcome, not which side did it.)"""
    topic, group = _topic(mock)
    gk = _groupkit(mock, group, "gk-leaves", share_acknowledgement_mode="explicit")
    _joined([gk], topic)
    values = {b"l%d" % i for i in range(8)}
    mock.produce(topic, sorted(values))
    held: list[Any] = []
    spin([lambda: held.extend(gk.poll())], lambda: bool(held), 20, "records at the member")
    kept, accepted = held[0], held[1:]
    for r in accepted:
        gk.consumer.acknowledge(r)
    assert not [e for e in gk.consumer.commit_sync(5).values() if e is not None]
    gk.consumer.close()
    after = _groupkit(mock, group, "gk-next")
    try:
        after.consumer.subscribe([topic])
        left = values - {r.value for r in accepted}
        spin([after.poll], lambda: {v for _, _, v, _ in after.got} >= left, 20,
             "the records not accepted at the next member")
        assert (kept.partition, kept.offset, kept.value, 2) in after.got
        assert not {v for _, _, v, _ in after.got} & {r.value for r in accepted}
    finally:
        after.consumer.close(5)


def test_records_a_groupkit_member_releases_go_to_a_confluent_member(
        mock: MockCluster) -> None:
    """The groupkit member releases every record it gets, then leaves; the confluent-kafka
    member takes its partitions and gets those records again, with a higher delivery count."""
    topic, group = _topic(mock)
    gk = _groupkit(mock, group, "gk-release", share_acknowledgement_mode="explicit")
    ck = _confluent(mock, group, "ck-takes-over")
    _joined([gk, ck], topic)
    # The groupkit member hears of the confluent one's join at its next heartbeat.
    spin([gk.poll, ck.poll], lambda: 0 < len(gk.consumer.assignment()) < 4, 10,
         "the two members to split the partitions")
    mine = {tp.partition for tp in gk.consumer.assignment()}
    sent = mock.produce(topic, (b"h%d" % i for i in range(40)))
    theirs = {i % 4 for i in range(1, sent + 1)} & mine

    def release_all() -> None:
        for r in gk.poll():
            gk.consumer.acknowledge(r, AcknowledgeType.RELEASE)

    per_partition = sent // 4
    spin([release_all, ck.poll], lambda: len({(p, o) for p, o, _, _ in gk.got})
         >= per_partition * len(theirs), 20, "every record of its partitions at groupkit")
    highest: dict[tuple[int, int], int] = {}
    for p, o, _, count in gk.got:
        highest[(p, o)] = max(count, highest.get((p, o), 0))
    gk.consumer.close()  # releases what it fetched and never handed over
    spin([ck.poll], lambda: {(p, o) for p, o, _, _ in ck.got} >= set(highest), 30,
         "groupkit's released records at confluent-kafka")
    again = {(p, o): c for p, o, _, c in ck.got if (p, o) in highest}
    assert all(again[k] > highest[k] for k in highest), (again, highest)
    ck.consumer.commit_sync(5)
    ck.consumer.close()
    _nothing_left(mock, topic, group)  # confluent-kafka's member accepted them


def test_an_idle_member_heartbeats_at_the_coordinators_interval(mock: MockCluster) -> None:
    """The mock repeats a member's assignment in every heartbeat answer; taken for a new one
    each time, it had a member heartbeat again at once (about 5,000 a second)."""
    topic, group = _topic(mock)
    beats: list[float] = []
    consumer = ShareConsumer(bootstrap_servers=mock.bootstrap_servers, group_id=group,
                             fetch_max_wait_ms=100, hooks=[
                                 lambda e: beats.append(time.monotonic())
                                 if isinstance(e, HeartbeatSent) else None])
    try:
        consumer.subscribe([topic])
        wait_for(lambda: bool(consumer.assignment()), 20, "the member to join",
                 step=lambda: consumer.poll(0.05))
        start = time.monotonic()
        while time.monotonic() - start < 2.0:
            consumer.poll(0.25)
        window = [t for t in beats if start <= t < start + 2.0]
        assert len(window) <= 2.0 / 0.5 + 2, f"{len(window)} heartbeats in 2 s"
    finally:
        consumer.close(5)


@pytest.mark.broker
def test_a_broker_without_share_group_apis_is_named_within_the_api_timeout(
        kafka_broker: Any) -> None:
    consumer = ShareConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id="nope",
                             default_api_timeout_ms=5000)
    consumer.subscribe(["anything"])
    start = time.monotonic()
    with pytest.raises(UnsupportedVersionError) as caught:
        while time.monotonic() - start < 5:
            consumer.poll(0.5)
    assert time.monotonic() - start < 5
    text = str(caught.value)
    assert "ShareGroupHeartbeat (API 76)" in text
    assert kafka_broker.bootstrap_servers.split(":")[1] in text  # the broker, by address
    consumer.close(2)


def test_confluent_share_consumers_are_peers_here() -> None:
    """The peer is what the issue says it is (2.16: ShareConsumer with acknowledge)."""
    assert hasattr(confluent_kafka, "ShareConsumer") and hasattr(confluent_kafka,
                                                                 "AcknowledgeType")


@pytest.mark.broker
def test_the_command_line_says_plainly_a_broker_has_no_share_groups(
        kafka_broker: Any, capsys: Any) -> None:
    from tests.support.cli_groups import run_cli

    boot = kafka_broker.bootstrap_servers
    status, _, err = run_cli(capsys, "groups", "list", "--type", "share",
                             "--bootstrap-server", boot)
    assert status == 0 and "no broker of this cluster offers share groups" in err


def test_a_member_that_polls_fast_then_stops_counts_every_record(mock: MockCluster) -> None:
    # The fast paths (empty answers fetched again by the fetcher alone, header lists made on
    # first read) leave nothing out: every record reaches the application once, with its
    # headers, and the metrics, the hooks and the commit each count all of them.
    topic, group = _topic(mock)
    metrics = PrometheusMetrics()
    acquired: list[int] = []
    member = _groupkit(mock, group, "gk-fast", hooks=[metrics, lambda e: acquired.append(
        e.records) if isinstance(e, ShareRecordsAcquired) else None])
    _joined([member], topic)
    producer = mock.warm_producer()
    sent = 600
    for i in range(sent):
        producer.produce(topic, value=b"v%d" % i, partition=i % 4,
                         headers=[("n", b"%d" % i)] if i % 3 == 0 else None)
    assert producer.flush(30) == 0
    headers: dict[bytes, list[tuple[str, bytes | None]]] = {}
    wait_for(lambda: len(headers) >= sent, 30, "every record",
             step=lambda: headers.update((r.value, r.headers) for r in member.poll(0.001)))
    for _ in range(20):  # and a few more fast polls: nothing else comes
        assert member.poll(0.001) == []
    _close([member])
    assert len(member.got) == len({(p, o) for p, o, _, _ in member.got}) == sent
    assert headers == {b"v%d" % i: [("n", b"%d" % i)] if i % 3 == 0 else []
                       for i in range(sent)}
    assert sum(acquired) == sent
    assert sum(len(offs) for offsets, error in member.results if error is None
               for offs in offsets.values()) == sent
    samples = samples_of(generate_latest(metrics.registry).decode())
    labels = {"group": group, "topic": topic}
    assert value(samples, "groupkit_share_records_acquired_total", **labels) == sent
    assert value(samples, "groupkit_share_records_acknowledged_total", type="ACCEPT",
                 result="ok", **labels) == sent


def test_a_record_limit_member_gets_every_record_once_and_is_told_the_limit_is_soft_here(
        mock: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    # The mock speaks ShareFetch v1, which cannot ask for record_limit: the member fetches from
    # one leader at a time all the same, and says so once for each leader it fetches from.
    topic, group = _topic(mock)
    member = _groupkit(mock, group, "gk-limit", share_acquire_mode="record_limit",
                       max_poll_records=50)
    with caplog.at_level(logging.WARNING, logger="groupkit.runtime.share_fetcher"):
        _joined([member], topic)
        sent = mock.produce(topic, (b"v%d" % i for i in range(300)))
        _drain([member], sent)
        _close([member])
    got = [(p, o) for p, o, _, _ in member.got]
    assert len(got) == len(set(got)) == sent
    assert sum(len(offs) for offsets, error in member.results if error is None
               for offs in offsets.values()) == sent
    said = [r.getMessage() for r in caplog.records if "record_limit" in r.getMessage()]
    assert said and len(set(said)) == len(said), said
    assert all("speaks v1" in line and "max_poll_records (50)" in line for line in said)


def test_a_renewal_is_refused_at_once_by_a_leader_older_than_kafka_4_2(
        mock: MockCluster) -> None:
    # The mock speaks ShareAcknowledge v1 (Kafka 4.1): RENEW (KIP-1222) needs v2. The refusal
    # names the leader and leaves the record this member's, to acknowledge another way;
    # tests/integration/test_share_renewals.py has renewals against a broker that takes them.
    topic, group = _topic(mock)
    gk = _groupkit(mock, group, "gk-renew", share_acknowledgement_mode="explicit")
    _joined([gk], topic)
    mock.produce(topic, [b"slow-job"])
    records: list[Any] = []
    spin([lambda: records.extend(gk.poll())], lambda: bool(records), 20, "the record")
    [record] = records
    assert gk.consumer.acquisition_lock_timeout_ms() == 30_000  # the mock's lock, as named
    with pytest.raises(FeatureUnsupportedError,
                       match=r"the broker 127\.0\.0\.1:\d+ \(node \d\) speaks ShareAcknowledge"
                             r" v1, and a RENEW acknowledgement needs v2"):
        gk.consumer.acknowledge(record, AcknowledgeType.RENEW)
    gk.consumer.acknowledge(record, AcknowledgeType.ACCEPT)
    [(tp, error)] = gk.consumer.commit_sync(10).items()
    assert (tp.partition, error) == (record.partition, None)
    gk.consumer.close()
