"""Admin.delete_consumer_group_offsets (OffsetDelete, API 47) against a fake broker.

The local broker (Tansu 0.6) has no OffsetDelete, so the request is checked here byte for byte
and answered with response bodies spelled out field by field, as Kafka 2.4+ writes them.
"""

from __future__ import annotations

import struct

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.errors import (
    ApiKey,
    ErrorCode,
    FeatureUnsupportedError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
)
from groupkit.protocol.headers import RequestHeader
from groupkit.protocol.versions import CLIENT_VERSIONS
from tests.support.fake_broker import FakeCluster, offset_delete_answer
from tests.support.wire_bytes import i32, s

OFFSET_DELETE = ApiKey.OFFSET_DELETE
SUBSCRIBED = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


@pytest.fixture
def cluster():
    made: list[FakeCluster] = []

    def make(answer, versions=None) -> FakeCluster:
        fake = FakeCluster(answer, {"orders": 3, "audit": 1}, versions)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.close()


def _request_body(frame: bytes) -> bytes:
    """The body of a v0-header request frame: after key, version, correlation id, client id."""
    client_id_len = struct.unpack_from(">h", frame, 8)[0]
    return frame[10 + client_id_len:]


def test_the_request_names_group_topics_and_partitions_and_success_returns(cluster) -> None:
    def answer(header: RequestHeader, frame: bytes) -> bytes:
        return offset_delete_answer(0, [("orders", [(0, 0), (2, 0)]), ("audit", [(0, 0)])])

    fake = cluster(answer)
    with Admin(bootstrap_servers=fake.bootstrap_servers) as admin:
        admin.delete_consumer_group_offsets(
            "g1", [TopicPartition("orders", 0), TopicPartition("orders", 2),
                   TopicPartition("audit", 0)])
    [(header, frame)] = fake.scripted
    assert (header.api_key, header.api_version) == (OFFSET_DELETE, 0)
    assert _request_body(frame) == (s("g1") + i32(2) + s("orders") + i32(2) + i32(0) + i32(2)
                                    + s("audit") + i32(1) + i32(0))


def test_a_subscribed_topic_is_refused_naming_each_failed_partition(cluster) -> None:
    fake = cluster(lambda header, frame: offset_delete_answer(
        0, [("orders", [(0, SUBSCRIBED), (1, 0), (2, SUBSCRIBED)])]))
    with Admin(bootstrap_servers=fake.bootstrap_servers) as admin, \
            pytest.raises(GroupSubscribedToTopicError) as caught:
        admin.delete_consumer_group_offsets(
            "g1", [TopicPartition("orders", p) for p in range(3)])
    assert "orders-0 (GROUP_SUBSCRIBED_TO_TOPIC), orders-2" in str(caught.value)
    assert "orders-1" not in str(caught.value)


def test_a_group_level_error_raises_its_exception(cluster) -> None:
    fake = cluster(lambda header, frame: offset_delete_answer(ErrorCode.GROUP_ID_NOT_FOUND, []))
    with Admin(bootstrap_servers=fake.bootstrap_servers) as admin, \
            pytest.raises(GroupIdNotFoundError, match="'ghost'"):
        admin.delete_consumer_group_offsets("ghost", [TopicPartition("orders", 0)])


def test_a_moved_coordinator_is_looked_up_again_and_asked_again(cluster) -> None:
    answers = [offset_delete_answer(ErrorCode.NOT_COORDINATOR, []),
               offset_delete_answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []), offset_delete_answer(0, [("orders", [(1, 0)])])]
    fake = cluster(lambda header, frame: answers.pop(0))
    with Admin(bootstrap_servers=fake.bootstrap_servers, retry_backoff_ms=1) as admin:
        admin.delete_consumer_group_offsets("g1", [TopicPartition("orders", 1)])
    assert [h.api_key for h, _ in fake.scripted] == [OFFSET_DELETE] * 3
    assert answers == []


def test_a_broker_without_offset_delete_raises_unsupported_version(cluster) -> None:
    versions = {k: v for k, v in CLIENT_VERSIONS.items() if k != OFFSET_DELETE}
    fake = cluster(lambda header, frame: b"", versions)
    with Admin(bootstrap_servers=fake.bootstrap_servers) as admin, \
            pytest.raises(FeatureUnsupportedError, match=r"OffsetDelete \(API key 47\).*Kafka 2\.4"):
        admin.delete_consumer_group_offsets("g1", [TopicPartition("orders", 0)])
    assert fake.scripted == []
