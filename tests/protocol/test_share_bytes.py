"""Share-group (KIP-932) frames written by real parts, decoded by groupkit, plus the layout of
what no test broker here speaks (ShareGroupDescribe, ShareFetch/ShareAcknowledge v0 and v2)
spelled by hand from Kafka's message definitions.

tests/fixtures/share_bytes.json holds what tests/fixtures/capture_share_bytes.py saw: two
confluent-kafka ShareConsumers on confluent-kafka's mock cluster (ShareGroupHeartbeat,
ShareFetch and ShareAcknowledge v1). Every frame must decode and encode back to the same bytes;
the facts below are the protocol's, checked where the real parts show them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupkit.errors import ApiKey, CorruptFrame, FieldVersionError
from groupkit.protocol.headers import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
)
from groupkit.protocol.messages.share_fetch import (
    ACK_ACCEPT,
    ACK_REJECT,
    ACK_RELEASE,
    ACK_RENEW,
    FINAL_SHARE_SESSION_EPOCH,
    AcknowledgementBatch,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchRequestPartition,
    ShareFetchRequestTopic,
    ShareFetchResponse,
)
from groupkit.protocol.messages.share_group import (
    LEAVE_SHARE_GROUP_EPOCH,
    ShareGroupDescribeAssignment,
    ShareGroupDescribeGroup,
    ShareGroupDescribeMember,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeTopicPartitions,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupkit.protocol.records import decode_records
from groupkit.protocol.registry import request_class
from groupkit.protocol.schema import Request, Response
from tests.support.wire_bytes import NO_TAGS, carr, cs, i8, i16, i32, i64

FIXTURE = Path(__file__).parents[1] / "fixtures" / "share_bytes.json"
CAPTURES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["captures"]


def _request(entry: dict[str, Any]) -> Request:
    header, body = decode_request_frame(bytes.fromhex(entry["request"]))
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["api_version"])
    return body


def _response(entry: dict[str, Any]) -> Response:
    cls = request_class(entry["api_key"]).Response
    return decode_response_frame(bytes.fromhex(entry["response"]), cls, entry["api_version"])[1]


def _exchanges(api_key: int, client_id: str | None = None,
               stage: str | None = None) -> list[tuple[Any, Any]]:
    return [(_request(e), _response(e)) for e in CAPTURES
            if e["api_key"] == api_key and (client_id is None or e["client_id"] == client_id)
            and (stage is None or e["stage"].startswith(stage))]


@pytest.mark.parametrize("entry", CAPTURES, ids=[f"{i}-{e['api_key']}"
                                                 for i, e in enumerate(CAPTURES)])
def test_every_captured_frame_decodes_and_encodes_back(entry: dict[str, Any]) -> None:
    request_frame = bytes.fromhex(entry["request"])
    header, request = decode_request_frame(request_frame)
    assert encode_request_frame(request, header.api_version, header.correlation_id,
                                header.client_id)[4:] == request_frame
    response_frame = bytes.fromhex(entry["response"])
    correlation_id, response = decode_response_frame(
        response_frame, type(request).Response, header.api_version)
    assert correlation_id == header.correlation_id
    encoded = encode_response_frame(response, header.api_version, correlation_id)[4:]
    if entry["api_key"] == ApiKey.SHARE_GROUP_HEARTBEAT:
        # Mock-cluster quirk (librdkafka 2.16): every ShareGroupHeartbeat answer carries one
        # zero byte after its body. Read like Java reads it (the fields it knows, the rest
        # left); the strict reader names it.
        assert response_frame == encoded + b"\x00"
        with pytest.raises(CorruptFrame, match="1 unexpected bytes"):
            decode_response_frame(response_frame, ShareGroupHeartbeatResponse,
                                  header.api_version, strict=True)
    else:
        assert encoded == response_frame


def test_a_joining_member_sends_its_own_id_and_its_topics_with_epoch_zero() -> None:
    join, answer = _exchanges(ApiKey.SHARE_GROUP_HEARTBEAT, "explicit")[0]
    assert isinstance(join, ShareGroupHeartbeatRequest)
    assert join.member_epoch == 0
    # The member makes up its id (a base64 uuid, as Java's Uuid.toString) and keeps it.
    assert len(join.member_id) == 22 and answer.member_id == join.member_id
    assert join.subscribed_topic_names == ["share-capture"]
    assert answer.error_code == 0 and answer.member_epoch > 0
    assert answer.heartbeat_interval_ms > 0
    assert answer.assignment is not None


def test_later_heartbeats_carry_the_epoch_and_null_for_what_did_not_change() -> None:
    beats = _exchanges(ApiKey.SHARE_GROUP_HEARTBEAT, "implicit", "two members")
    (_, joined), (beat, _) = beats[0], beats[1]
    assert beat.member_epoch == joined.member_epoch
    assert beat.subscribed_topic_names is None and beat.rack_id is None


def test_the_group_shares_the_four_partitions_between_the_two_members() -> None:
    held = {}
    for client in ("explicit", "implicit"):
        last = [resp for _, resp in _exchanges(ApiKey.SHARE_GROUP_HEARTBEAT, client,
                                               "two members") if resp.assignment][-1]
        held[client] = {p for tp in last.assignment.topic_partitions for p in tp.partitions}
    assert held["explicit"] | held["implicit"] == {0, 1, 2, 3}


def test_a_share_session_opens_with_epoch_zero_and_every_partition_then_counts_up() -> None:
    fetches = _exchanges(ApiKey.SHARE_FETCH, "explicit")
    opening = fetches[0][0]
    assert isinstance(opening, ShareFetchRequest)
    assert opening.share_session_epoch == 0
    assert {p.partition_index for t in opening.topics for p in t.partitions} == {2, 3}
    epochs = [req.share_session_epoch for req, _ in fetches]
    acks = [req.share_session_epoch for req, _ in _exchanges(ApiKey.SHARE_ACKNOWLEDGE,
                                                            "explicit")]
    # ShareFetch and ShareAcknowledge share one session and one epoch sequence (a request
    # still in flight when a stage ended is not in the capture, so the count may skip one).
    both = sorted(epochs + acks[:-1])
    assert both[0] == 0 and len(set(both)) == len(both)
    # An incremental fetch names no partitions when the session's set did not change.
    assert fetches[1][0].topics == [] and fetches[1][0].forgotten_topics_data == []


def test_acquired_records_name_the_offsets_and_their_delivery_count() -> None:
    request, answer = _exchanges(ApiKey.SHARE_FETCH, "explicit", "both members")[0]
    assert isinstance(answer, ShareFetchResponse)
    assert answer.acquisition_lock_timeout_ms > 0  # v1+
    for topic in answer.responses:
        for partition in topic.partitions:
            acquired = {o for r in partition.acquired_records
                        for o in range(r.first_offset, r.last_offset + 1)}
            assert acquired and all(r.delivery_count == 1 for r in partition.acquired_records)
            offsets = {r.offset for r in decode_records(bytes(partition.records))}
            assert acquired <= offsets


def test_explicit_acknowledgements_go_one_type_per_range() -> None:
    request, answer = _exchanges(ApiKey.SHARE_ACKNOWLEDGE, "explicit", "explicit: accept")[0]
    assert isinstance(request, ShareAcknowledgeRequest)
    types = [b.acknowledge_types for t in request.topics for p in t.partitions
             for b in p.acknowledgement_batches]
    assert sorted(types) == sorted([[ACK_ACCEPT], [ACK_RELEASE], [ACK_REJECT]] * 2)
    assert isinstance(answer, ShareAcknowledgeResponse)
    assert answer.error_code == 0
    assert all(p.error_code == 0 for t in answer.responses for p in t.partitions)


def test_implicit_acknowledgements_ride_on_the_next_share_fetch() -> None:
    request, answer = _exchanges(ApiKey.SHARE_FETCH, "implicit", "implicit")[0]
    batches = [b for t in request.topics for p in t.partitions for b in p.acknowledgement_batches]
    assert batches and all(b.acknowledge_types == [ACK_ACCEPT] for b in batches)
    assert all(b.last_offset >= b.first_offset for b in batches)
    assert all(p.acknowledge_error_code == 0 for t in answer.responses for p in t.partitions)


def test_released_records_come_back_with_delivery_count_two() -> None:
    _, answer = _exchanges(ApiKey.SHARE_FETCH, "explicit", "explicit: released")[0]
    counts = [r.delivery_count for t in answer.responses for p in t.partitions
              for r in p.acquired_records]
    assert counts == [2, 2]


def test_a_member_leaves_with_epoch_minus_one_and_closes_its_session() -> None:
    leave, left = _exchanges(ApiKey.SHARE_GROUP_HEARTBEAT, "explicit")[-1]
    assert leave.member_epoch == LEAVE_SHARE_GROUP_EPOCH == -1
    assert left.error_code == 0 and left.member_epoch == -1 and left.assignment is None
    close, closed = _exchanges(ApiKey.SHARE_ACKNOWLEDGE, "explicit")[-1]
    assert close.share_session_epoch == FINAL_SHARE_SESSION_EPOCH == -1
    assert closed.error_code == 0


# --- hand-spelled layout (Kafka's message definitions) -----------------------------------------

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_share_fetch_v0_carries_partition_max_bytes_and_v1_the_record_limits() -> None:
    request = ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=3, max_wait_ms=500, min_bytes=1,
        max_bytes=1024, max_records=50, batch_size=25,
        topics=[ShareFetchRequestTopic(topic_id=TOPIC, partitions=[ShareFetchRequestPartition(
            partition_index=1, partition_max_bytes=4096, acknowledgement_batches=[
                AcknowledgementBatch(first_offset=5, last_offset=7,
                                     acknowledge_types=[ACK_ACCEPT])])])])
    head = cs("g") + cs("m") + i32(3) + i32(500) + i32(1) + i32(1024)
    ack = carr([i64(5) + i64(7) + carr([i8(ACK_ACCEPT)]) + NO_TAGS])
    assert request.encode(0) == head + carr([
        TOPIC.bytes + carr([i32(1) + i32(4096) + ack + NO_TAGS]) + NO_TAGS]) + carr([]) + NO_TAGS
    v1 = head + i32(50) + i32(25) + carr([
        TOPIC.bytes + carr([i32(1) + ack + NO_TAGS]) + NO_TAGS]) + carr([]) + NO_TAGS
    assert request.encode(1) == v1
    # v2 (Kafka 4.2) adds the acquire mode and the renew flag after the batch size.
    v2 = head + i32(50) + i32(25) + i8(0) + i8(0) + v1[len(head) + 8:]
    assert request.encode(2) == v2
    with pytest.raises(FieldVersionError):
        ShareFetchRequest(share_session_epoch=1, max_wait_ms=0, min_bytes=0,
                          is_renew_ack=True).encode(1)


def test_share_fetch_answers_the_lock_timeout_from_v1() -> None:
    partition = (i32(0) + i16(0) + cs(None) + i16(0) + cs(None) + i32(-1) + i32(-1) + NO_TAGS
                 + b"\x01" + carr([i64(0) + i64(0) + i16(1) + NO_TAGS]) + NO_TAGS)
    topics = carr([TOPIC.bytes + carr([partition]) + NO_TAGS])
    v0 = i32(0) + i16(0) + cs(None) + topics + carr([]) + NO_TAGS
    v1 = i32(0) + i16(0) + cs(None) + i32(30000) + topics + carr([]) + NO_TAGS
    assert ShareFetchResponse.decode(v0, 0).acquisition_lock_timeout_ms == 0
    answer = ShareFetchResponse.decode(v1, 1)
    assert answer.acquisition_lock_timeout_ms == 30000
    assert answer.responses[0].partitions[0].acquired_records[0].delivery_count == 1
    assert bytes(answer.responses[0].partitions[0].records) == b""


def test_share_acknowledge_v2_carries_renew_and_answers_the_lock_timeout() -> None:
    request = ShareAcknowledgeRequest(group_id="g", member_id="m", share_session_epoch=4,
                                      is_renew_ack=True, topics=[])
    assert request.encode(2) == cs("g") + cs("m") + i32(4) + i8(1) + carr([]) + NO_TAGS
    assert ACK_RENEW == 4
    answer = i32(0) + i16(0) + cs(None) + i32(15000) + carr([]) + carr([]) + NO_TAGS
    assert ShareAcknowledgeResponse.decode(answer, 2).acquisition_lock_timeout_ms == 15000


def test_share_group_describe_layout() -> None:
    request = ShareGroupDescribeRequest(group_ids=["g"], include_authorized_operations=True)
    assert request.encode(1) == carr([cs("g")]) + i8(1) + NO_TAGS
    member = ShareGroupDescribeMember(
        member_id="m", member_epoch=3, client_id="c", client_host="/h",
        subscribed_topic_names=["t"],
        assignment=ShareGroupDescribeAssignment(topic_partitions=[
            ShareGroupDescribeTopicPartitions(topic_id=TOPIC, topic_name="t", partitions=[0])]))
    group = ShareGroupDescribeGroup(group_id="g", group_state="Stable", group_epoch=3,
                                    assignment_epoch=3, assignor_name="simple",
                                    members=[member])
    member_bytes = (cs("m") + cs(None) + i32(3) + cs("c") + cs("/h") + carr([cs("t")])
                    + carr([TOPIC.bytes + cs("t") + carr([i32(0)]) + NO_TAGS]) + NO_TAGS
                    + NO_TAGS)
    body = (i32(0) + carr([i16(0) + cs(None) + cs("g") + cs("Stable") + i32(3) + i32(3)
                           + cs("simple") + carr([member_bytes]) + i32(-2147483648) + NO_TAGS])
            + NO_TAGS)
    assert ShareGroupDescribeResponse(groups=[group]).encode(1) == body
    assert ShareGroupDescribeResponse.decode(body, 1).groups[0] == group
