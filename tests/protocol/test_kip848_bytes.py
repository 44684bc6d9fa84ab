"""KIP-848 frames written by real parts, decoded by groupkit, plus the layout spelled by hand.

tests/fixtures/kip848_bytes.json holds what tests/fixtures/capture_kip848_bytes.py saw:
confluent-kafka consumers (``group.protocol=consumer``) on confluent-kafka's mock cluster
(ConsumerGroupHeartbeat v1, OffsetCommit v9 with the member epoch), and Tansu's answers to
ConsumerGroupDescribe v0 (Tansu has API 69 but not 68, so it describes only groups it cannot
host as consumer-protocol groups). Every frame must decode strictly and encode back to the
same bytes; the facts below are the protocol's, checked where the real parts show them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupkit.errors import ApiKey
from groupkit.protocol.headers import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
)
from groupkit.protocol.messages.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupDescribeAssignment,
    ConsumerGroupDescribeGroup,
    ConsumerGroupDescribeMember,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeTopicPartitions,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupkit.protocol.registry import request_class
from groupkit.protocol.schema import Request, Response
from tests.support.wire_bytes import NO_TAGS, carr, cs, i8, i16, i32

FIXTURE = Path(__file__).parents[1] / "fixtures" / "kip848_bytes.json"
CAPTURES: dict[str, list[dict[str, Any]]] = json.loads(FIXTURE.read_text())["captures"]
ALL = [(source, i, e) for source, entries in CAPTURES.items() for i, e in enumerate(entries)]


def _request(entry: dict[str, Any]) -> Request:
    header, body = decode_request_frame(bytes.fromhex(entry["request"]))
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["api_version"])
    return body


def _response(entry: dict[str, Any]) -> Response:
    cls = request_class(entry["api_key"]).Response
    _, body = decode_response_frame(bytes.fromhex(entry["response"]), cls, entry["api_version"],
                                    strict=True)
    return body


def _exchanges(source: str, api_key: int, client_id: str | None = None,
               stage: str | None = None) -> list[tuple[Any, Any]]:
    return [(_request(e), _response(e)) for e in CAPTURES[source]
            if e["api_key"] == api_key and (client_id is None or e["client_id"] == client_id)
            and (stage is None or e["stage"].startswith(stage))]


def _held(assignment: list[ConsumerGroupHeartbeatTopicPartitions] | None) -> set[int]:
    return {p for tp in assignment or () for p in tp.partitions}


@pytest.mark.parametrize(("source", "index", "entry"), ALL,
                         ids=[f"{s}-{i}-{e['api_key']}" for s, i, e in ALL])
def test_every_captured_frame_decodes_strictly_and_encodes_back(
        source: str, index: int, entry: dict[str, Any]) -> None:
    request_frame = bytes.fromhex(entry["request"])
    header, request = decode_request_frame(request_frame)
    assert encode_request_frame(request, header.api_version, header.correlation_id,
                                header.client_id)[4:] == request_frame
    response_frame = bytes.fromhex(entry["response"])
    correlation_id, response = decode_response_frame(
        response_frame, type(request).Response, header.api_version, strict=True)
    assert correlation_id == header.correlation_id
    assert encode_response_frame(response, header.api_version, correlation_id)[4:] \
        == response_frame


def test_a_joining_member_sends_everything_with_epoch_zero_and_its_own_member_id() -> None:
    join, answer = _exchanges("mock", ApiKey.CONSUMER_GROUP_HEARTBEAT, "dynamic")[0]
    assert isinstance(join, ConsumerGroupHeartbeatRequest)
    assert join.member_epoch == 0
    # KIP-1082 (v1): the member makes up its id (a base64 uuid) and keeps it; the answer agrees.
    assert len(join.member_id) == 22 and answer.member_id == join.member_id
    assert join.rebalance_timeout_ms > 0
    assert join.subscribed_topic_names == ["kip848-capture"]
    assert join.topic_partitions == []
    assert answer.error_code == 0 and answer.member_epoch > 0
    assert answer.heartbeat_interval_ms > 0
    assert _held(answer.assignment.topic_partitions) == {0, 1, 2, 3}


def test_the_next_heartbeat_acknowledges_the_assignment_and_then_only_fields_that_changed() -> None:
    beats = _exchanges("mock", ApiKey.CONSUMER_GROUP_HEARTBEAT, "dynamic", "one member")
    (_, joined), (ack, acked), (steady, _) = beats[0], beats[1], beats[2]
    assert ack.member_epoch == joined.member_epoch
    assert ack.topic_partitions == joined.assignment.topic_partitions
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1
    assert acked.assignment is None  # null: unchanged
    assert steady.topic_partitions is None and steady.subscribed_topic_names is None


def test_a_revoking_member_commits_with_its_epoch_then_acknowledges_and_gets_a_new_epoch() -> None:
    stage = "a static member"
    beats = _exchanges("mock", ApiKey.CONSUMER_GROUP_HEARTBEAT, "dynamic", stage)
    told = next(i for i, (_, resp) in enumerate(beats) if resp.assignment is not None)
    (_, target), (ack, acked) = beats[told], beats[told + 1]
    epoch = target.member_epoch
    assert len(_held(target.assignment.topic_partitions)) == 2
    # The epoch moves on only once the member has given up what it was asked to revoke.
    assert ack.member_epoch == epoch and ack.topic_partitions == target.assignment.topic_partitions
    assert acked.member_epoch > epoch
    commits = _exchanges("mock", ApiKey.OFFSET_COMMIT, "dynamic", stage)
    assert commits
    for commit, answer in commits:
        assert isinstance(commit, OffsetCommitRequest) and isinstance(answer, OffsetCommitResponse)
        assert commit.generation_id_or_member_epoch == epoch
        assert commit.member_id == ack.member_id
        assert all(p.error_code == 0 for t in answer.topics for p in t.partitions)


def test_a_static_member_sends_its_instance_id_and_regex_and_leaves_with_epoch_minus_two() -> None:
    beats = _exchanges("mock", ApiKey.CONSUMER_GROUP_HEARTBEAT, "static")
    join = beats[0][0]
    assert join.instance_id == "instance-1"
    assert join.subscribed_topic_regex is not None and "kip848" in join.subscribed_topic_regex
    assigned = next(resp for _, resp in beats if resp.assignment is not None)
    assert len(_held(assigned.assignment.topic_partitions)) == 2
    leave, left = beats[-1]
    assert leave.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH == -2
    assert leave.instance_id == "instance-1"
    assert left.error_code == 0 and left.member_epoch == -2


def test_a_dynamic_member_leaves_with_epoch_minus_one() -> None:
    leave, left = _exchanges("mock", ApiKey.CONSUMER_GROUP_HEARTBEAT, "dynamic")[-1]
    assert leave.member_epoch == LEAVE_GROUP_MEMBER_EPOCH == -1
    assert left.error_code == 0 and left.member_epoch == -1


def test_tansu_describes_groups_by_the_v0_layout() -> None:
    answers = [resp for _, resp in _exchanges("tansu", ApiKey.CONSUMER_GROUP_DESCRIBE)]
    assert all(isinstance(a, ConsumerGroupDescribeResponse) for a in answers)
    assert [[g.group_id for g in a.groups] for a in answers] == [
        ["unknown"], ["classic"], ["unknown", "classic"], []]
    # Tansu 0.6.0 answers error 0 with an "Empty" state for a group it does not know, and
    # "Stable" with no members for a classic group (Kafka answers GROUP_ID_NOT_FOUND to both);
    # only the layout is asserted here, not those answers.
    assert all(g.members == [] for a in answers for g in a.groups)


# --- hand-spelled layout -----------------------------------------------------------------------

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def _tps(partitions: list[int]) -> bytes:
    return TOPIC.bytes + carr([i32(p) for p in partitions]) + NO_TAGS


def test_the_response_assignment_is_a_nullable_struct_after_an_int8_marker() -> None:
    head = i32(0) + i16(0) + cs(None) + cs("m") + i32(5) + i32(3000)
    null = head + i8(-1) + NO_TAGS
    present = head + i8(1) + carr([_tps([2, 0])]) + NO_TAGS + NO_TAGS
    assert ConsumerGroupHeartbeatResponse.decode(null, 1).assignment is None
    decoded = ConsumerGroupHeartbeatResponse.decode(present, 1)
    assert decoded.assignment == ConsumerGroupHeartbeatAssignment(topic_partitions=[
        ConsumerGroupHeartbeatTopicPartitions(topic_id=TOPIC, partitions=[2, 0])])
    assert decoded.encode(1) == present
    assert ConsumerGroupHeartbeatResponse(
        member_id="m", member_epoch=5, heartbeat_interval_ms=3000).encode(1) == null


def test_the_request_regex_is_carried_from_v1_only() -> None:
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0,
                                            subscribed_topic_regex="orders-.*")
    common = cs("g") + cs("m") + i32(0) + cs(None) + cs(None) + i32(-1) + carr(None)
    assert request.encode(1) == common + cs("orders-.*") + cs(None) + carr(None) + NO_TAGS
    with pytest.raises(Exception, match="not carried by version 0"):
        request.encode(0)
    plain = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0)
    assert plain.encode(0) == common + cs(None) + carr(None) + NO_TAGS


def test_describe_v1_adds_the_member_type_after_the_target_assignment() -> None:
    member = ConsumerGroupDescribeMember(
        member_id="m", member_epoch=3, client_id="c", client_host="/h",
        subscribed_topic_names=["t"], member_type=1,
        assignment=ConsumerGroupDescribeAssignment(topic_partitions=[
            ConsumerGroupDescribeTopicPartitions(topic_id=TOPIC, topic_name="t",
                                                 partitions=[0])]))
    group = ConsumerGroupDescribeGroup(group_id="g", group_state="Stable", group_epoch=3,
                                       assignment_epoch=3, assignor_name="uniform",
                                       members=[member])
    body = ConsumerGroupDescribeResponse(groups=[group]).encode(1)
    member_bytes = (cs("m") + cs(None) + cs(None) + i32(3) + cs("c") + cs("/h") + carr([cs("t")])
                    + cs(None)
                    + carr([TOPIC.bytes + cs("t") + carr([i32(0)]) + NO_TAGS]) + NO_TAGS
                    + carr([]) + NO_TAGS + i8(1) + NO_TAGS)
    assert body == (i32(0) + carr([i16(0) + cs(None) + cs("g") + cs("Stable") + i32(3) + i32(3)
                                   + cs("uniform") + carr([member_bytes]) + i32(-2147483648)
                                   + NO_TAGS]) + NO_TAGS)
    assert ConsumerGroupDescribeResponse.decode(body, 1).groups[0].members[0] == member
    assert ConsumerGroupDescribeResponse.decode(
        ConsumerGroupDescribeResponse(groups=[group]).encode(0), 0).groups[0].members[0] \
        .member_type == -1


def test_an_empty_regex_means_no_pattern_and_is_dropped_at_v0_where_there_is_none() -> None:
    names = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0,
                                          subscribed_topic_names=["t"], subscribed_topic_regex="")
    assert ConsumerGroupHeartbeatRequest.decode(names.encode(0), 0).subscribed_topic_regex is None
    assert ConsumerGroupHeartbeatRequest.decode(names.encode(1), 1).subscribed_topic_regex == ""
