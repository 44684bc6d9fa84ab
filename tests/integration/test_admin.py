"""Admin round trips on Tansu, and member decoding on constructed DescribeGroups answers.

Tansu's DescribeGroups returns no members and ListGroups lists only groups with committed
offsets (see the design notes), so member decoding is also tested on constructed bytes.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (
    Consumer as ConfluentConsumer,
    Producer as ConfluentProducer,
    TopicPartition as ConfluentTP,
)

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.admin_values import MemberDescription
from groupkit.errors import (
    ConfigError,
    NoBrokersAvailable,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from groupkit.producer import Producer
from groupkit.protocol.consumer import Assignment, Subscription
from groupkit.protocol.messages.describe_groups import (
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
    DescribeGroupsResponseMember,
)
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from groupkit.values import OffsetAndMetadata
from tests.support.broker_data import commit_as_peer

WAIT = 20.0


@pytest.fixture(scope="module")
def admin(kafka_broker):  # noqa: F811
    with Admin(bootstrap_servers=kafka_broker.bootstrap_servers) as a:
        yield a


# --- topics ------------------------------------------------------------------------------------


def test_create_list_and_delete_topics(admin, unique_name) -> None:  # noqa: F811
    a, b = unique_name("a"), unique_name("b")
    created = admin.create_topics([a, b], num_partitions=3)
    assert [(c.name, c.num_partitions) for c in created] == [(a, 3), (b, 3)]
    assert all(c.topic_id.int != 0 for c in created)
    topics = admin.list_topics()
    assert topics[a] == 3 and topics[b] == 3
    with pytest.raises(TopicAlreadyExistsError, match=a):
        admin.create_topics([a])
    admin.delete_topics([b])
    topics = admin.list_topics()
    assert b not in topics and a in topics
    with pytest.raises(UnknownTopicOrPartitionError, match=b):
        admin.delete_topics([b])


def test_bad_arguments_are_refused(admin) -> None:
    with pytest.raises(ConfigError):
        admin.create_topics([])
    with pytest.raises(ConfigError):
        admin.delete_topics([])
    with pytest.raises(ConfigError, match="'earliest', 'latest' or a timestamp"):
        admin.list_offsets({TopicPartition("t", 0): "newest"})
    with pytest.raises(ConfigError, match="'earliest', 'latest' or a timestamp"):
        admin.list_offsets({TopicPartition("t", 0): -5})


def test_unreachable_bootstrap_server() -> None:
    with LocalBroker() as broker:
        address = broker.bootstrap_servers
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailable, match=address):
        Admin(bootstrap_servers=address)
    assert time.monotonic() - started < 5


# --- offsets -----------------------------------------------------------------------------------


def test_list_offsets_matches_confluent_watermarks(kafka_broker, admin,  # noqa: F811
                                                   unique_name) -> None:  # noqa: F811
    topic = unique_name("offsets")
    admin.create_topics([topic], num_partitions=2)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers) as p:
        first = [p.send(topic, b"v%d" % i, partition=0, timestamp_ms=1_000 + i * 10)
                 for i in range(5)]
        p.flush(WAIT)
        late = p.send(topic, b"late", partition=0, timestamp_ms=5_000)
        p.flush(WAIT)
    assert [f.result(0).offset for f in first] == list(range(5))
    assert late.result(0).offset == 5
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    found = admin.list_offsets({tp0: "latest", tp1: "latest"})
    probe = ConfluentConsumer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                               "group.id": topic, "log_level": 0})
    try:
        for tp in (tp0, tp1):
            low, high = probe.get_watermark_offsets(ConfluentTP(*tp), timeout=WAIT)
            assert found[tp].offset == high
        # Kafka answers offset 5 here; Tansu 0.6.0 answers 0 for every timestamp, so the
        # check is that both clients get the broker's one answer.
        by_time = admin.list_offsets({tp0: 4_000})[tp0]
        theirs = probe.offsets_for_times([ConfluentTP(topic, 0, 4_000)], timeout=WAIT)
        assert by_time.offset == theirs[0].offset
    finally:
        probe.close()
    assert admin.list_offsets({tp0: "earliest"})[tp0].offset == 0
    assert admin.list_offsets({tp1: "earliest"})[tp1].offset == 0


def test_list_offsets_of_an_unknown_topic_raises(admin, unique_name) -> None:  # noqa: F811
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.list_offsets({TopicPartition(unique_name("ghost"), 0): "latest"})


# --- groups ------------------------------------------------------------------------------------


def test_group_offsets_listing_describing_and_deleting(kafka_broker, admin,  # noqa: F811
                                                       unique_name) -> None:  # noqa: F811
    topic, group = unique_name("gt"), unique_name("g")
    admin.create_topics([topic], num_partitions=3)
    producer = ConfluentProducer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, b"v", partition=i % 3)
    assert producer.flush(WAIT) == 0
    commit_as_peer(kafka_broker.bootstrap_servers, group, {(topic, 0): 3, (topic, 2): 1})

    assert group in {g.group_id for g in admin.list_groups()}
    committed = admin.list_group_offsets(group)
    assert {tp: c.offset for tp, c in committed.items()} == {
        TopicPartition(topic, 0): 3, TopicPartition(topic, 2): 1}
    assert all(isinstance(c, OffsetAndMetadata) for c in committed.values())
    only = admin.list_group_offsets(group, [TopicPartition(topic, 2), TopicPartition(topic, 1)])
    assert {tp: c.offset for tp, c in only.items()} == {TopicPartition(topic, 2): 1}

    described = admin.describe_groups([group])
    assert described[group].group_id == group and isinstance(described[group].members, tuple)

    admin.delete_groups([group])
    assert admin.list_group_offsets(group) == {}
    assert group not in {g.group_id for g in admin.list_groups()}


# --- member decoding (constructed bytes) -------------------------------------------------------


def _member(metadata: bytes, assignment: bytes) -> DescribeGroupsResponseMember:
    return DescribeGroupsResponseMember(member_id="m-1", group_instance_id="static-1",
                                        client_id="app", client_host="/10.0.0.1",
                                        member_metadata=metadata, member_assignment=assignment)


def test_consumer_members_decode_into_topic_partitions() -> None:
    subscription = Subscription(["orders", "audit"], b"ud", [("orders", [1])], 4, "rack-a")
    assignment = Assignment([("orders", [0, 2]), ("audit", [1])], None)
    group = DescribeGroupsResponseGroup(
        error_code=0, group_id="g", group_state="Stable", protocol_type="consumer",
        protocol_data="range", members=[_member(subscription.encode(), assignment.encode(1))])
    wire = DescribeGroupsResponse(groups=[group]).encode(5)
    decoded = DescribeGroupsResponse.decode(wire, 5).groups[0]
    member = MemberDescription.from_wire(decoded.members[0], decoded.protocol_type)
    assert member.subscription == subscription
    assert member.assignment == (TopicPartition("orders", 0), TopicPartition("orders", 2),
                                 TopicPartition("audit", 1))
    assert (member.member_id, member.group_instance_id, member.client_id) == (
        "m-1", "static-1", "app")


def test_undecodable_and_foreign_member_bytes_are_kept_raw() -> None:
    garbage = _member(b"\x00\x01\xff", b"\x00")
    member = MemberDescription.from_wire(garbage, "consumer")
    assert member.subscription is None and member.assignment is None
    assert member.metadata == b"\x00\x01\xff" and member.assignment_bytes == b"\x00"
    connect = _member(Subscription(["x"]).encode(), Assignment([("x", [0])]).encode())
    foreign = MemberDescription.from_wire(connect, "connect")
    assert foreign.subscription is None and foreign.assignment is None
    empty = MemberDescription.from_wire(_member(b"", b""), "consumer")
    assert empty.subscription is None and empty.assignment is None


@pytest.mark.parametrize("version", [1, 7])
def test_group_offsets_through_single_group_offset_fetch(kafka_broker, unique_name,  # noqa: F811
                                                         version) -> None:
    topic, group = unique_name("old"), unique_name("g")
    with Admin(bootstrap_servers=kafka_broker.bootstrap_servers) as admin:
        admin.create_topics([topic], num_partitions=2)
        commit_as_peer(kafka_broker.bootstrap_servers, group, {(topic, 1): 7})
        node = admin._cluster.coordinator(group)
        conn = admin._cluster.connection(node)
        conn.connect()
        conn.versions[9] = version  # as a broker before OffsetFetch v8 would negotiate
        wanted = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        found = admin.list_group_offsets(group, wanted)
        assert {tp: c.offset for tp, c in found.items()} == {TopicPartition(topic, 1): 7}
        if version >= 2:
            every = admin.list_group_offsets(group)
            assert {tp: c.offset for tp, c in every.items()} == {TopicPartition(topic, 1): 7}
