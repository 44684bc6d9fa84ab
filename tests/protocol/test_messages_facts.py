"""The wire facts that bite, checked against bytes written by hand from Kafka's protocol guide.

The expected frames here are built with ``struct`` alone, not with groupkit's Writer, so a shared
mistake in the codec cannot hide itself.
"""

from __future__ import annotations

import uuid

import pytest

from groupkit.errors import FeatureUnsupportedError, FieldVersionError
from groupkit.protocol.messages.fetch import (
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.messages.find_coordinator import (
    KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from groupkit.protocol.messages.group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupRequestMember,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    SyncGroupRequest,
)
from groupkit.protocol.messages.list_groups import ListGroupsRequest
from groupkit.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from tests.support.wire_bytes import NO_TAGS, arr, b32, carr, cb, cs, i8, i16, i32, s

MEMBER_ID_REQUIRED = 79


# --- JoinGroup v4+: MEMBER_ID_REQUIRED ---------------------------------------------------------


def test_member_id_required_v4_carries_the_id_to_rejoin_with() -> None:
    frame = (i32(0) + i16(MEMBER_ID_REQUIRED) + i32(-1) + s("") + s("") + s("consumer-1-abc")
             + arr([]))
    resp = JoinGroupResponse.decode(frame, 4)
    assert resp == JoinGroupResponse(error_code=MEMBER_ID_REQUIRED, generation_id=-1,
                                     protocol_name="", leader="", member_id="consumer-1-abc")
    assert resp.encode(4) == frame


def test_member_id_required_v7_has_null_protocol_type_and_name() -> None:
    frame = (i32(0) + i16(MEMBER_ID_REQUIRED) + i32(-1) + cs(None) + cs(None) + cs("")
             + cs("m-1") + carr([]) + NO_TAGS)
    resp = JoinGroupResponse.decode(frame, 7)
    assert resp.error_code == MEMBER_ID_REQUIRED
    assert resp.member_id == "m-1"
    assert resp.protocol_type is None and resp.protocol_name is None
    assert resp.members == []
    assert resp.encode(7) == frame


def test_rejoin_after_member_id_required_sends_the_given_id() -> None:
    protocols = [JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")]
    first = JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=30000,
                             member_id="", protocol_type="consumer", protocols=protocols)
    again = JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=30000,
                             member_id="m-1", protocol_type="consumer", protocols=protocols)
    tail = s("consumer") + arr([s("range") + b32(b"\x00\x01")])
    assert first.encode(4) == s("g") + i32(10000) + i32(30000) + s("") + tail
    assert again.encode(4) == s("g") + i32(10000) + i32(30000) + s("m-1") + tail
    assert again.encode(5) == s("g") + i32(10000) + i32(30000) + s("m-1") + s(None) + tail


def test_join_group_static_membership_needs_v5() -> None:
    req = JoinGroupRequest(group_id="g", session_timeout_ms=1, member_id="",
                           group_instance_id="host-1", protocol_type="consumer")
    with pytest.raises(FeatureUnsupportedError, match=r"static membership .*Kafka 2\.3"):
        req.encode(4)
    assert JoinGroupRequest.decode(req.encode(5), 5).group_instance_id == "host-1"


def test_join_group_reason_is_dropped_before_v8() -> None:
    req = JoinGroupRequest(group_id="g", session_timeout_ms=1, member_id="m",
                           protocol_type="consumer", reason="rebalance")
    assert req.encode(7) == JoinGroupRequest(
        group_id="g", session_timeout_ms=1, member_id="m", protocol_type="consumer").encode(7)
    assert JoinGroupRequest.decode(req.encode(8), 8).reason == "rebalance"


def test_join_group_response_v9_flexible_shape_with_members() -> None:
    frame = (i32(5) + i16(0) + i32(3) + cs("consumer") + cs("range") + cs("m-1") + i8(1)
             + cs("m-1") + carr([cs("m-1") + cs("static-1") + cb(b"meta") + NO_TAGS]) + NO_TAGS)
    resp = JoinGroupResponse.decode(frame, 9)
    assert resp == JoinGroupResponse(
        throttle_time_ms=5, generation_id=3, protocol_type="consumer", protocol_name="range",
        leader="m-1", skip_assignment=True, member_id="m-1",
        members=[JoinGroupResponseMember(member_id="m-1", group_instance_id="static-1",
                                         metadata=b"meta")])
    assert resp.encode(9) == frame


def test_sync_group_v5_sends_protocol_type_and_name() -> None:
    req = SyncGroupRequest(group_id="g", generation_id=1, member_id="m",
                           protocol_type="consumer", protocol_name="range")
    assert req.encode(5) == (cs("g") + i32(1) + cs("m") + cs(None) + cs("consumer")
                             + cs("range") + carr([]) + NO_TAGS)
    assert req.encode(3) == s("g") + i32(1) + s("m") + s(None) + arr([])


# --- LeaveGroup v3: batched members -------------------------------------------------------------


def test_leave_group_v0_to_v2_names_one_member() -> None:
    req = LeaveGroupRequest(group_id="g", member_id="m-1")
    for version in (0, 1, 2):
        assert req.encode(version) == s("g") + s("m-1")
    assert LeaveGroupRequest.decode(s("g") + s("m-1"), 2) == req


def test_leave_group_v3_sends_a_members_array() -> None:
    req = LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequestMember(member_id="m-1"),
        LeaveGroupRequestMember(member_id="", group_instance_id="static-2")])
    frame = s("g") + arr([s("m-1") + s(None), s("") + s("static-2")])
    assert req.encode(3) == frame
    assert LeaveGroupRequest.decode(frame, 3) == req
    with pytest.raises(FieldVersionError, match="removes one member, not 2"):
        req.encode(2)


def test_leave_group_one_member_built_once_encodes_at_every_version() -> None:
    member = LeaveGroupRequestMember(member_id="m-1", reason="bye")
    both = LeaveGroupRequest(group_id="g", member_id="m-1", members=[member])
    for req in (both, LeaveGroupRequest(group_id="g", members=[member])):
        assert req.encode(2) == s("g") + s("m-1")
        assert req.encode(3) == s("g") + arr([s("m-1") + s(None)])
        assert req.encode(5) == cs("g") + carr([cs("m-1") + cs(None) + cs("bye") + NO_TAGS]) \
            + NO_TAGS
    assert LeaveGroupRequest(group_id="g", member_id="m-1").encode(3) == \
        s("g") + arr([s("m-1") + s(None)])
    with pytest.raises(FieldVersionError, match="two members"):
        LeaveGroupRequest(group_id="g", member_id="m-2", members=[member]).encode(2)
    with pytest.raises(FieldVersionError, match="not among its members"):
        LeaveGroupRequest(group_id="g", member_id="m-2", members=[member]).encode(3)


def test_leave_group_v5_member_reason_and_v3_response() -> None:
    req = LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequestMember(member_id="m-1", reason="shutting down")])
    assert req.encode(5) == cs("g") + carr([cs("m-1") + cs(None) + cs("shutting down")
                                            + NO_TAGS]) + NO_TAGS
    assert req.encode(4) == cs("g") + carr([cs("m-1") + cs(None) + NO_TAGS]) + NO_TAGS
    frame = i32(0) + i16(0) + arr([s("m-1") + s(None) + i16(25)])
    assert LeaveGroupResponse.decode(frame, 3) == LeaveGroupResponse(
        members=[LeaveGroupResponseMember(member_id="m-1", group_instance_id=None,
                                          error_code=25)])


# --- FindCoordinator v4: batching ---------------------------------------------------------------


def test_find_coordinator_v3_looks_up_one_key() -> None:
    req = FindCoordinatorRequest(key="g", key_type=KEY_TYPE_GROUP)
    assert req.encode(0) == s("g")
    assert req.encode(1) == s("g") + i8(0)
    assert req.encode(3) == cs("g") + i8(0) + NO_TAGS
    assert FindCoordinatorRequest.decode(cs("g") + i8(0) + NO_TAGS, 3) == req


def test_find_coordinator_v4_batches_keys() -> None:
    req = FindCoordinatorRequest(key_type=KEY_TYPE_GROUP, coordinator_keys=["g1", "g2"])
    assert req.encode(4) == i8(0) + carr([cs("g1"), cs("g2")]) + NO_TAGS
    assert req.encode(6) == req.encode(4)
    assert FindCoordinatorRequest.decode(req.encode(4), 4) == req
    with pytest.raises(FieldVersionError, match="looks up one key, not 2"):
        req.encode(3)


def test_find_coordinator_one_key_built_once_encodes_at_every_version() -> None:
    for req in (FindCoordinatorRequest(key="g"), FindCoordinatorRequest(coordinator_keys=["g"]),
                FindCoordinatorRequest(key="g", coordinator_keys=["g"])):
        assert req.encode(0) == s("g")
        assert req.encode(3) == cs("g") + i8(0) + NO_TAGS
        assert req.encode(4) == i8(0) + carr([cs("g")]) + NO_TAGS
    with pytest.raises(FieldVersionError, match="two keys"):
        FindCoordinatorRequest(key="a", coordinator_keys=["b"]).encode(3)
    with pytest.raises(FieldVersionError, match="not among its coordinator_keys"):
        FindCoordinatorRequest(key="a", coordinator_keys=["b"]).encode(4)


def test_find_coordinator_v4_answers_per_key() -> None:
    frame = i32(0) + carr([
        cs("g1") + i32(1) + cs("broker1") + i32(9092) + i16(0) + cs(None) + NO_TAGS,
        cs("g2") + i32(-1) + cs("") + i32(-1) + i16(15) + cs("not available") + NO_TAGS,
    ]) + NO_TAGS
    resp = FindCoordinatorResponse.decode(frame, 4)
    assert resp.coordinators == [
        FindCoordinatorResponseCoordinator(key="g1", node_id=1, host="broker1", port=9092,
                                           error_code=0, error_message=None),
        FindCoordinatorResponseCoordinator(key="g2", node_id=-1, host="", port=-1,
                                           error_code=15, error_message="not available"),
    ]
    assert resp.encode(4) == frame


def test_find_coordinator_v3_response_is_single() -> None:
    frame = i32(0) + i16(0) + cs(None) + i32(2) + cs("h") + i32(9093) + NO_TAGS
    resp = FindCoordinatorResponse.decode(frame, 3)
    assert (resp.node_id, resp.host, resp.port, resp.error_message) == (2, "h", 9093, None)
    with pytest.raises(FieldVersionError, match="node_id"):
        resp.encode(4)


# --- Metadata v9+: flexible forms ---------------------------------------------------------------


def test_metadata_request_null_topics_mean_all_from_v1() -> None:
    req = MetadataRequest(topics=None)
    assert req.encode(1) == i32(-1)
    assert req.encode(9) == b"\x00" + i8(1) + i8(0) + i8(0) + NO_TAGS
    with pytest.raises(FieldVersionError, match="cannot be None"):
        req.encode(0)
    no_auto_create = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    assert no_auto_create.encode(4) == i32(-1) + i8(0)
    with pytest.raises(FeatureUnsupportedError, match=r"allow_auto_topic_creation.*Kafka 0\.11"):
        no_auto_create.encode(3)
    assert MetadataRequest().encode(0) == i32(0)


def test_metadata_request_v9_is_compact_and_tagged() -> None:
    req = MetadataRequest(topics=[MetadataRequestTopic(name="t")],
                          include_topic_authorized_operations=True)
    assert req.encode(9) == (carr([cs("t") + NO_TAGS]) + i8(1) + i8(0) + i8(1) + NO_TAGS)
    assert req.encode(8) == arr([s("t")]) + i8(1) + i8(0) + i8(1)


def test_metadata_request_v10_topic_id_and_v11_drops_cluster_operations() -> None:
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    req = MetadataRequest(topics=[MetadataRequestTopic(topic_id=tid, name=None)])
    assert req.encode(12) == (carr([tid.bytes + cs(None) + NO_TAGS]) + i8(1) + i8(0)
                              + NO_TAGS)
    asking = MetadataRequest(include_cluster_authorized_operations=True)
    assert asking.encode(10).endswith(i8(1) + i8(0) + NO_TAGS)
    with pytest.raises(FieldVersionError, match="include_cluster_authorized_operations"):
        asking.encode(11)


def test_metadata_response_v12_flexible_with_null_topic_name() -> None:
    tid = uuid.UUID(int=7)
    partition = (i16(0) + i32(0) + i32(1) + i32(4) + carr([i32(1)]) + carr([i32(1)])
                 + carr([]) + NO_TAGS)
    frame = (i32(0) + carr([i32(1) + cs("b1") + i32(9092) + cs(None) + NO_TAGS])
             + cs("cluster") + i32(1)
             + carr([i16(0) + cs(None) + tid.bytes + i8(0) + carr([partition])
                     + i32(-(2**31)) + NO_TAGS])
             + NO_TAGS)
    resp = MetadataResponse.decode(frame, 12)
    assert resp == MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="b1", port=9092)],
        cluster_id="cluster", controller_id=1,
        topics=[MetadataResponseTopic(name=None, topic_id=tid, partitions=[
            MetadataResponsePartition(leader_id=1, leader_epoch=4, replica_nodes=[1],
                                      isr_nodes=[1])])])
    assert resp.encode(12) == frame


def test_metadata_response_v0_has_no_rack_controller_or_cluster() -> None:
    resp = MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="b1", port=9092, rack="r1")],
        cluster_id="c", controller_id=3)
    assert resp.encode(0) == arr([i32(1) + s("b1") + i32(9092)]) + arr([])
    assert MetadataResponse.decode(resp.encode(0), 0).controller_id == -1


# --- ListGroups filters -------------------------------------------------------------------------


def test_list_groups_filters_arrive_in_v4_and_v5() -> None:
    req = ListGroupsRequest(states_filter=["Stable"], types_filter=["classic"])
    assert req.encode(5) == carr([cs("Stable")]) + carr([cs("classic")]) + NO_TAGS
    with pytest.raises(FeatureUnsupportedError, match=r"types_filter.*Kafka 3\.8"):
        req.encode(4)
    assert ListGroupsRequest(states_filter=["Stable"]).encode(4) == carr([cs("Stable")]) + NO_TAGS
    assert ListGroupsRequest().encode(0) == b""


# --- Fetch record sets ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 12])
def test_a_fetch_answers_record_sets_are_read_only_views_of_its_frame(version: int) -> None:
    # v4 writes a record set as int32-length bytes, v12 (flexible) as compact bytes.
    sets = [b"\x01" * 300, b"\x02" * 5]
    answer = FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[
        FetchResponsePartition(partition_index=i, records=records)
        for i, records in enumerate(sets)])])
    frame = bytearray(answer.encode(version))
    got = [p.records for p in FetchResponse.decode(frame, version).responses[0].partitions]
    assert got == sets
    for view in got:
        # A view of the frame itself (no copy per partition), which nothing can write through.
        assert isinstance(view, memoryview) and view.readonly and view.obj is frame
