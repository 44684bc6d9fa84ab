"""RENEW acknowledgements (KIP-1222, Kafka 4.2) from a real ShareConsumer over real sockets.

Neither test broker speaks ShareAcknowledge v2 (the mock stops at v1, Tansu has no share
groups; tests/integration/test_share_consumer.py shows the mock's refusal), so a one-node
fake broker plays Kafka 4.2 here: it assigns the member partition 0 of "jobs", hands out
offsets 0-2 once, answers later fetches empty after a short wait, and applies every
acknowledgement, answering a ShareAcknowledge with a 45 s lock (as v2 does) or, when told to,
refusing renewals with INVALID_RECORD_STATE for the partition, as Kafka does when
``share.renew.acknowledge.enable`` is off or the record is no longer this member's.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupkit import AcknowledgeType, ShareConsumer, TopicPartition
from groupkit.errors import ApiKey, ErrorCode, IllegalStateError, InvalidRecordStateError
from groupkit.protocol.headers import RequestHeader
from groupkit.protocol.messages.share_fetch import (
    ACK_ACCEPT,
    ACK_RENEW,
    AcquiredRecords,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartition,
    ShareAcknowledgeResponseTopic,
    ShareFetchResponse,
    ShareFetchResponsePartition,
    ShareFetchResponseTopic,
)
from groupkit.protocol.messages.share_group import (
    ShareGroupHeartbeatAssignment,
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.records import encode_batch
from tests.support.fake_broker import FakeCluster, reply
from tests.support.waits import wait_for

TOPIC, TOPIC_ID = "jobs", uuid.UUID(int=42)
TP = TopicPartition(TOPIC, 0)


def _unscripted(header: RequestHeader, frame: bytes) -> bytes:
    raise AssertionError(f"the share consumer sent API {header.api_key}, which a share member"
                         " does not need")


class _Kafka42(FakeCluster):
    """One node leading partition 0 of "jobs" and coordinating its share group."""

    def __init__(self) -> None:
        self.refuse_renewals = False
        #: (api key, version, is_renew_ack, offset -> type) for every request with
        #: acknowledgements, in order.
        self.acks: list[tuple[int, int, bool, dict[int, int]]] = []
        self._served = False
        super().__init__(_unscripted, {TOPIC: 1}, topic_ids={TOPIC: TOPIC_ID}, script={
            ApiKey.SHARE_GROUP_HEARTBEAT: self._heartbeat,
            ApiKey.SHARE_FETCH: self._fetch, ApiKey.SHARE_ACKNOWLEDGE: self._acknowledge})

    def _heartbeat(self, sock: socket.socket, header: RequestHeader, request: Any) -> None:
        leaving = request.member_epoch < 0
        reply(sock, header, ShareGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=0, member_id=request.member_id,
            member_epoch=request.member_epoch if leaving else 1, heartbeat_interval_ms=200,
            assignment=None if leaving else ShareGroupHeartbeatAssignment(topic_partitions=[
                ShareGroupHeartbeatTopicPartitions(topic_id=TOPIC_ID, partitions=[0])])))

    def _record_acks(self, header: RequestHeader, request: Any) -> None:
        got = {b.first_offset + i: b.acknowledge_types[min(i, len(b.acknowledge_types) - 1)]
               for t in request.topics for p in t.partitions
               for b in p.acknowledgement_batches
               for i in range(b.last_offset - b.first_offset + 1)}
        if got:
            self.acks.append((header.api_key, header.api_version, request.is_renew_ack, got))

    def _fetch(self, sock: socket.socket, header: RequestHeader, request: Any) -> None:
        self._record_acks(header, request)
        records, acquired = None, []
        if not self._served:
            self._served = True
            records = encode_batch([(None, b"job-%d" % i) for i in range(3)])
            acquired = [AcquiredRecords(first_offset=0, last_offset=2, delivery_count=1)]
        else:
            time.sleep(min(request.max_wait_ms, 50) / 1000)  # a long poll, shortened
        reply(sock, header, ShareFetchResponse(
            throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=30_000,
            responses=[ShareFetchResponseTopic(topic_id=TOPIC_ID, partitions=[
                ShareFetchResponsePartition(partition_index=0, error_code=0,
                                            acknowledge_error_code=0, records=records,
                                            acquired_records=acquired)])],
            node_endpoints=[]))

    def _acknowledge(self, sock: socket.socket, header: RequestHeader, request: Any) -> None:
        self._record_acks(header, request)
        code = ErrorCode.INVALID_RECORD_STATE if request.is_renew_ack and \
            self.refuse_renewals else 0
        reply(sock, header, ShareAcknowledgeResponse(
            throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=45_000,
            responses=[ShareAcknowledgeResponseTopic(topic_id=TOPIC_ID, partitions=[
                ShareAcknowledgeResponsePartition(partition_index=0, error_code=code)
                for t in request.topics for _ in t.partitions])],
            node_endpoints=[]))


@pytest.fixture
def broker() -> Iterator[_Kafka42]:
    with _Kafka42() as fake:
        yield fake


@pytest.fixture
def consumer(broker: _Kafka42) -> Iterator[tuple[ShareConsumer, list[tuple[Any, Any]]]]:
    member = ShareConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="renewers",
                           share_acknowledgement_mode="explicit", fetch_max_wait_ms=50)
    answers: list[tuple[Any, Any]] = []
    lock = threading.Lock()

    def on_acks(offsets: Any, error: Any) -> None:
        with lock:
            answers.append((offsets, error))

    member.set_acknowledgement_commit_callback(on_acks)
    member.subscribe([TOPIC])
    try:
        yield member, answers
    finally:
        member.close(5)


def _first_poll(member: ShareConsumer) -> list[Any]:
    got: list[Any] = []
    wait_for(lambda: bool(got), 15, "the three records",
             step=lambda: got.extend(member.poll(0.2)))
    return got


def test_a_renewed_record_comes_back_to_be_acknowledged_again(
        broker: _Kafka42, consumer: tuple[ShareConsumer, list[tuple[Any, Any]]]) -> None:
    member, answers = consumer
    first = _first_poll(member)
    assert [(r.offset, r.value, r.delivery_count) for r in first] == \
        [(0, b"job-0", 1), (1, b"job-1", 1), (2, b"job-2", 1)]
    assert member.acquisition_lock_timeout_ms() == 30_000  # as the ShareFetch answer said
    member.acknowledge(first[0], AcknowledgeType.RENEW)
    member.acknowledge(first[1])
    member.acknowledge(first[2])
    again = member.poll(10)
    # The same record, not a redelivery: its delivery count did not move.
    assert [(r.offset, r.value, r.delivery_count) for r in again] == [(0, b"job-0", 1)]
    assert member.acquisition_lock_timeout_ms() == 45_000  # as the renewal's answer said
    # The renewal went alone on a ShareAcknowledge v2 flagged as renewing (Java sends it on a
    # ShareFetch that asks for no records), with the acceptances of the same poll.
    assert broker.acks == [(ApiKey.SHARE_ACKNOWLEDGE, 2, True,
                            {0: ACK_RENEW, 1: ACK_ACCEPT, 2: ACK_ACCEPT})]
    assert answers == [({TP: {0, 1, 2}}, None)]
    # Handed back, it is the poll's record: unacknowledged, the next poll refuses.
    with pytest.raises(IllegalStateError, match="not acknowledged"):
        member.poll(0)
    member.acknowledge(again[0])
    assert member.commit_sync(5) == {TP: None}
    assert broker.acks[-1] == (ApiKey.SHARE_ACKNOWLEDGE, 2, False, {0: ACK_ACCEPT})
    assert member.poll(0.2) == []  # nothing more to hand back


def test_a_renewal_the_broker_refuses_is_reported_and_the_record_not_handed_back(
        broker: _Kafka42, consumer: tuple[ShareConsumer, list[tuple[Any, Any]]]) -> None:
    member, answers = consumer
    broker.refuse_renewals = True
    first = _first_poll(member)
    member.acknowledge(first[0], AcknowledgeType.RENEW)
    member.acknowledge(first[1], AcknowledgeType.RELEASE)
    member.acknowledge(first[2], AcknowledgeType.RELEASE)
    result = member.commit_sync(5)
    assert isinstance(result[TP], InvalidRecordStateError)
    assert len(answers) == 1 and answers[0][0] == {TP: {0, 1, 2}} \
        and isinstance(answers[0][1], InvalidRecordStateError)
    assert member.poll(0.3) == []
    with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
        member.acknowledge(first[0])


def test_a_renewed_record_cannot_be_acknowledged_until_a_poll_hands_it_back(
        broker: _Kafka42, consumer: tuple[ShareConsumer, list[tuple[Any, Any]]]) -> None:
    member, _ = consumer
    first = _first_poll(member)
    member.acknowledge(first[0], AcknowledgeType.RENEW)
    member.acknowledge(first[0], AcknowledgeType.RENEW)  # again, before it is sent: as once
    for record in first[1:]:
        member.acknowledge(record)
    assert member.commit_sync(5) == {TP: None}  # renewed, not handed back yet
    with pytest.raises(IllegalStateError, match="renewed"):
        member.acknowledge(first[0])
    assert [r.offset for r in member.poll(5)] == [0]
    member.acknowledge(first[0], AcknowledgeType.REJECT)
    assert member.commit_sync(5) == {TP: None}
    assert broker.acks[-1][3] == {0: 3}
