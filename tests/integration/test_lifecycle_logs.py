"""At INFO a member says what the Java client says: coordinator found, (re)joining and why,
the generation joined as leader or follower with the protocol, partitions added and revoked,
offsets committed on revoke, leaving; every line names the group and the member id."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pytest

from groupkit.consumer import Consumer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic
from tests.support.peers import FAST_GROUP
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker


def test_a_member_logs_its_life_at_info_with_group_and_member_id(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str],  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="groupkit")
    topic, group = unique_name("life"), unique_name("g")
    make_topic(kafka_broker.bootstrap_servers, topic, 2, 10)
    consumer = Consumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id=group,
                        auto_offset_reset="earliest", **FAST_GROUP)
    got: list[object] = []
    consumer.subscribe([topic])
    try:
        wait_for(lambda: len(got) >= 10, 45, "10 records", lambda: got.extend(consumer.poll(0.2)))
        member = consumer.member_id
    finally:
        consumer.close(10)
    assert member
    lines = [r.getMessage() for r in caplog.records
             if r.levelno == logging.INFO and r.getMessage().startswith(f"[group {group}, ")]
    expected = [
        r"discovered group coordinator \S+:\d+ \(node -?\d+\)",
        r"\(re-\)joining group: ",
        rf"\[group {re.escape(group)}, member {re.escape(member)}\] joined generation \d+ as"
        r" leader with protocol cooperative-sticky \(1 members\)",
        r"synced generation \d+: 2 partition\(s\) assigned \(cooperative-sticky\)",
        rf"adding newly assigned partitions \[{re.escape(topic)}-0, {re.escape(topic)}-1\]",
        rf"revoking previously assigned partitions \[{re.escape(topic)}-0, {re.escape(topic)}-1\]",
        r"committed offsets of revoked partitions: .*@",
        r"leaving group: ",
    ]
    for pattern in expected:
        assert any(re.search(pattern, line) for line in lines), (pattern, lines)
