"""The default assignors ["cooperative-sticky", "range"], both ways round, on the real broker:
groupkit members alone rebalance incrementally; a groupkit member joins a group of kafka-python
or confluent-kafka members left at their own defaults (range first) by the shared protocol."""

from __future__ import annotations

from typing import Any

import pytest

from assignors import RebalanceProtocol, TopicPartition
from groupkit.consumer import Consumer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic
from tests.support.peers import (
    FAST_GROUP,
    ConfluentMember,
    GroupkitMember,
    KafkaPythonMember,
    Member,
    consumed,
    owned_exactly_once,
)
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker


class Held:
    """A listener keeping what its consumer holds and every revocation it was told of."""

    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        if partitions:
            self.revoked.append(set(partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        raise AssertionError(f"partitions lost in a plain rebalance: {partitions}")


def test_an_all_groupkit_group_rebalances_incrementally_by_default(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("coop"), unique_name("g")
    make_topic(bootstrap, topic, 4, 40)
    every = {TopicPartition(topic, p) for p in range(4)}
    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": group,
                                "auto_offset_reset": "earliest", **FAST_GROUP}
    first, second = Consumer(**settings), Consumer(**settings)
    one, two = Held(), Held()
    try:
        first.subscribe([topic], listener=one)
        wait_for(lambda: first.assignment() == every, 45, "the first member to hold all",
                 lambda: first.poll(0.2))
        assert first.rebalance_protocol is RebalanceProtocol.COOPERATIVE
        second.subscribe([topic], listener=two)

        def both_poll() -> None:
            first.poll(0.1)
            second.poll(0.1)
        wait_for(lambda: first.assignment() | second.assignment() == every
                 and not first.assignment() & second.assignment()
                 and bool(second.assignment()), 60, "the partitions shared out", both_poll)
        revoked = list(one.revoked)
        taken = second.assignment()
    finally:
        second.close(10)
        first.close(10)
    # Eager would have revoked all four from the first member; cooperative only what moved.
    assert revoked and set().union(*revoked) == taken and taken < every, revoked


@pytest.mark.parametrize("peer", [KafkaPythonMember, ConfluentMember])
def test_a_default_groupkit_member_joins_a_group_of_default_peers(
        kafka_broker: LocalBroker, unique_name, peer: type[Member]) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("mixed"), unique_name("g")
    produced = make_topic(bootstrap, topic, 4, 200)
    every = {TopicPartition(topic, p) for p in range(4)}
    # Every member at its client's default assignors (strategy None), committing as by default.
    first = peer(bootstrap, group, [topic], None, f"{peer.client}-0", auto_commit=True)
    members = [first, GroupkitMember(bootstrap, group, [topic], None, "groupkit-1",
                                     auto_commit=True)]
    try:
        first.start()
        wait_for(lambda: first.snapshot()[1] == every, 45, f"{first.name} to own every partition")
        members[1].start()
        wait_for(lambda: owned_exactly_once(members, every) and consumed(members) >= produced,
                 60, "every partition owned once and every record consumed")
    finally:
        for member in members:
            member.stop()
    assert consumed(members) == produced
