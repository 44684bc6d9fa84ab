"""The everyday paths pinned to older Kafka releases with ``api_version``, on the local broker.

Each release caps every API at the versions that release speaks (2.1, the oldest broker the
Java 4 client serves; 2.4, the first flexible group versions; 2.8; 3.9), so these runs send what
a client sends to a broker of that release: produce, group consume (join, sync, heartbeat,
commit, committed, position, leave; cooperative and eager; static membership where the release
has it), the admin calls and the CLI's groups commands. What a release lacks must be a
FeatureUnsupportedError naming the release that has it, never an encoding error.

Tansu quirks these runs meet (docs/test-brokers.md), worked around without asserting them:
InitProducerId below v3 (Kafka 2.5) fails with UNKNOWN_SERVER_ERROR, so below 2.5 the producer
runs without idempotence; OffsetFetch v2-v7 for all of a group's partitions is answered without
its topic list, so the calls that read every committed partition (``list_group_offsets``
without partitions, ``groups describe``) run under the 3.9 pin only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit import Admin, Consumer, Producer
from groupkit.errors import FeatureUnsupportedError
from groupkit.hooks import HeartbeatAnswered
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.cli_groups import cli_json, run_cli
from tests.support.peers import FAST_GROUP
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker

RELEASES = ["2.1", "2.4", "2.8", "3.9"]
RECORDS = 20
PARTITIONS = 2


def at_least(release: str, oldest: str) -> bool:
    return tuple(map(int, release.split("."))) >= tuple(map(int, oldest.split(".")))


def make_topic(bootstrap: str, release: str, topic: str) -> list[TopicPartition]:
    """A topic of two partitions with RECORDS keyed records, all written under the pin."""
    with Admin(bootstrap_servers=bootstrap, api_version=release) as admin:
        admin.create_topics([topic], num_partitions=PARTITIONS)
    idempotent = {} if at_least(release, "2.5") else {"enable_idempotence": False}
    with Producer(bootstrap_servers=bootstrap, api_version=release, **idempotent) as producer:
        futures = [producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=i % PARTITIONS)
                   for i in range(RECORDS)]
        producer.flush(30)
    assert [f.result(5).offset for f in futures[-PARTITIONS:]] == [RECORDS // PARTITIONS - 1] * 2
    return [TopicPartition(topic, p) for p in range(PARTITIONS)]


def consume_in_group(bootstrap: str, release: str, group: str, topic: str,
                     assignors: list[str], static: str | None) -> dict[str, Any]:
    """Join ``group``, consume every record, commit, read back committed offsets and
    positions, and leave: what each step gave."""
    beats: list[HeartbeatAnswered] = []
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, api_version=release,
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        assignors=assignors, group_instance_id=static,
                        leave_group_on_close=True, **FAST_GROUP,
                        hooks=[lambda e: beats.append(e) if isinstance(e, HeartbeatAnswered)
                               else None])
    got: list[bytes | None] = []
    try:
        consumer.subscribe([topic])
        wait_for(lambda: len(got) >= RECORDS and any(b.error_code == 0 for b in beats), 30,
                 f"{RECORDS} records and an accepted heartbeat in {group}",
                 lambda: got.extend(r.value for r in consumer.poll(0.2)))
        consumer.commit()
        owned = sorted(consumer.assignment())
        return {"values": got, "protocol": consumer.rebalance_protocol,
                "committed": {tp: c.offset if c else None
                              for tp, c in consumer.committed(owned, 10).items()},
                "positions": {tp: consumer.position(tp, 10) for tp in owned}}
    finally:
        consumer.close(10)


def in_threads(*calls: Callable[[], dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``calls`` at once (each group forms in about 3 s on Tansu); their results in order,
    or the first error raised."""
    results: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], dict[str, Any]]) -> None:
        try:
            results[i] = call()
        except BaseException as exc:  # re-raised below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


@pytest.mark.parametrize("release", RELEASES)
def test_produce_and_consume_in_cooperative_and_eager_groups(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str],  # noqa: F811
        release: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("t")
    partitions = make_topic(bootstrap, release, topic)
    cooperative, eager = unique_name("coop"), unique_name("eager")
    # Static membership (KIP-345) is there from 2.3: one pinned run joins as a static member.
    static = "pinned-static-1" if release == "2.4" else None
    coop, eag = in_threads(
        lambda: consume_in_group(bootstrap, release, cooperative, topic,
                                 ["cooperative-sticky"], None),
        lambda: consume_in_group(bootstrap, release, eager, topic, ["range"], static))
    wanted = {b"v%d" % i for i in range(RECORDS)}
    ends = {tp: RECORDS // PARTITIONS for tp in partitions}
    for result in (coop, eag):
        assert set(result["values"]) == wanted and len(result["values"]) == RECORDS
        assert result["committed"] == ends and result["positions"] == ends
    assert (coop["protocol"].name, eag["protocol"].name) == ("COOPERATIVE", "EAGER")
    with Admin(bootstrap_servers=bootstrap, api_version=release) as admin:
        # Each member left on close (LeaveGroup at the pinned version): no members remain.
        described = admin.describe_groups([cooperative, eager])
        assert not described[cooperative].members and not described[eager].members


def test_static_membership_under_a_release_without_it_names_the_release(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str]) -> None:  # noqa: F811
    consumer = Consumer(bootstrap_servers=kafka_broker.bootstrap_servers, api_version="2.1",
                        group_id=unique_name("g"), group_instance_id="static-1", **FAST_GROUP)
    started = time.monotonic()
    try:
        consumer.subscribe([unique_name("t")])
        with pytest.raises(FeatureUnsupportedError, match=r"static membership") as raised:
            wait_for(lambda: False, 20, "the member to stop", lambda: consumer.poll(0.2))
    finally:
        consumer.close(5)
    assert raised.value.release == "2.3" and "Kafka 2.3 or newer" in str(raised.value)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("release", RELEASES)
def test_admin_calls_and_the_cli_groups_commands(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str],  # noqa: F811
        release: str, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("t"), unique_name("g")
    partitions = make_topic(bootstrap, release, topic)
    first = partitions[0]
    with Admin(bootstrap_servers=bootstrap, api_version=release) as admin:
        # A group with committed offsets and no members, as Java's alterConsumerGroupOffsets.
        admin.alter_consumer_group_offsets(group, {first: 3, partitions[1]: 7})
        listed = {g.group_id for g in admin.list_groups()}
        assert group in listed
        assert not admin.describe_groups([group])[group].members
        committed = admin.list_group_offsets(group, partitions)
        assert {tp: c.offset for tp, c in committed.items()} == {first: 3, partitions[1]: 7}
        if at_least(release, "3.0"):  # see the module docstring: Tansu's OffsetFetch < v8
            assert {tp: c.offset for tp, c in admin.list_group_offsets(group).items()} \
                == {first: 3, partitions[1]: 7}
        earliest = admin.list_offsets({first: "earliest"})[first].offset
        assert earliest == 0
        assert admin.list_offsets({first: int(time.time() * 1000) - 600_000})[first].offset \
            == 0
        assert admin.log_end_offsets(partitions) == {tp: RECORDS // PARTITIONS
                                                     for tp in partitions}
        try:
            admin.delete_consumer_group_offsets(group, [first])
        except FeatureUnsupportedError as exc:  # the pin (before 2.4) or the broker lacks it
            assert exc.release == "2.4"
        else:
            assert at_least(release, "2.4")

    pin = ("--bootstrap-server", bootstrap, "--api-version", release)
    groups = {g["group"]: g for g in cli_json(capsys, "groups", "list", *pin)}
    assert group in groups
    if at_least(release, "3.0"):
        [described] = cli_json(capsys, "groups", "describe", group, *pin)
        assert described["state"] == "Empty" and not described["members"]
        plan = cli_json(capsys, "groups", "reset-offsets", group, "--topic", topic,
                        "--to-earliest", *pin)
        assert {(r["partition"], r["new_offset"]) for r in plan} == {(0, 0), (1, 0)}
    status, out, err = run_cli(capsys, "groups", "delete", group, *pin)
    assert status == 0, err
    with Admin(bootstrap_servers=bootstrap, api_version=release) as admin:
        assert group not in {g.group_id for g in admin.list_groups()}
        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
