"""Specific wire facts of the offset, fetch, produce, SASL and topic-admin schemas.

Each layout test spells out the expected bytes field by field and, where kafka-python 3 (built
from Kafka's own message definitions) can encode the same message, checks it agrees. The
``test_tansu_*`` tests decode response bodies captured from a Tansu v0.6.0 broker over a raw
socket, and ``test_every_field_matches_kafkas_definition`` checks each field (versions,
nullability, tag, ignorable, default) against the Kafka JSON definitions kafka-python ships.
"""

from __future__ import annotations

import json
import re
import uuid
from importlib import resources
from typing import Any

import attrs
import pytest
from kafka.protocol.admin.topics import (
    CreateTopicsRequest as KpCreateTopicsRequest,
    DeleteTopicsRequest as KpDeleteTopicsRequest,
)
from kafka.protocol.consumer.fetch import (
    FetchRequest as KpFetchRequest,
    FetchResponse as KpFetchResponse,
)
from kafka.protocol.consumer.group import (
    OffsetCommitRequest as KpOffsetCommitRequest,
    OffsetDeleteRequest as KpOffsetDeleteRequest,
    OffsetDeleteResponse as KpOffsetDeleteResponse,
    OffsetFetchRequest as KpOffsetFetchRequest,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest as KpListOffsetsRequest
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest as KpSaslAuthenticateRequest,
    SaslHandshakeRequest as KpSaslHandshakeRequest,
)

from groupkit.errors import CorruptFrame, FeatureUnsupportedError, FieldVersionError
from groupkit.protocol import schema
from groupkit.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestAssignment,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseConfig,
    CreateTopicsResponseTopic,
)
from groupkit.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestTopic,
    DeleteTopicsResponse,
)
from groupkit.protocol.messages.fetch import (
    READ_COMMITTED,
    FetchRequest,
    FetchRequestForgottenTopic,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseAbortedTransaction,
    FetchResponseEpochEndOffset,
    FetchResponseLeaderIdAndEpoch,
    FetchResponseNodeEndpoint,
    FetchResponsePartition,
    FetchResponseSnapshotId,
    FetchResponseTopic,
)
from groupkit.protocol.messages.list_offsets import (
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
)
from groupkit.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupkit.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupkit.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupkit.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
    ProduceResponseLeaderIdAndEpoch,
    ProduceResponseNodeEndpoint,
    ProduceResponsePartition,
    ProduceResponseTopic,
)
from groupkit.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import Array, Message, Struct
from tests.support.wire_bytes import (
    COMPACT_NULL,
    NO_TAGS,
    NULL_ARRAY,
    NULL_STRING,
    carr_len,
    cs,
    i8,
    i16,
    i32,
    i64,
    s,
    uv,
)

TOPIC_ID = uuid.UUID("01a20257-9e73-7fc3-972e-8dcd0c74e42a")


def to_kafka_python(kp_cls: Any, obj: Struct) -> Any:
    """Build the kafka-python twin of a groupkit message, field by field (names agree)."""
    kwargs: dict[str, Any] = {}
    for a in attrs.fields(type(obj)):
        if a.name == "unknown_tags":
            continue
        value = getattr(obj, a.name)
        default = a.default.factory() if isinstance(a.default, attrs.Factory) else a.default
        if value == default:
            continue
        kp_field = kp_cls._struct.fields[a.name]
        if kp_field.is_struct_array() and value is not None:
            value = [to_kafka_python(kp_field.data_class, item) for item in value]
        elif kp_field.is_struct() and value is not None:
            value = to_kafka_python(kp_field.data_class, value)
        kwargs[a.name] = value
    return kp_cls(**kwargs)


def assert_layout(msg: Message, version: int, expected: bytes, kp_cls: Any = None) -> None:
    """``msg`` encodes to ``expected``, decodes back to itself, and kafka-python agrees."""
    encoded = msg.encode(version)
    assert encoded.hex() == expected.hex()
    assert type(msg).decode(encoded, version) == msg
    if kp_cls is not None:
        assert to_kafka_python(kp_cls, msg).encode(version=version).hex() == expected.hex()


# --- OffsetCommit -----------------------------------------------------------------------------


def _commit(**kwargs: Any) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(
        partition_index=3, committed_offset=42, committed_metadata="m",
        **kwargs.pop("partition", {}))
    return OffsetCommitRequest(
        group_id="g", topics=[OffsetCommitRequestTopic(name="t", partitions=[partition])],
        **kwargs)


def test_offset_commit_v2_carries_retention_time_between_member_and_topics() -> None:
    msg = _commit(generation_id_or_member_epoch=5, member_id="m1", retention_time_ms=86_400_000)
    expected = (s("g") + i32(5) + s("m1") + i64(86_400_000)
                + i32(1) + s("t") + i32(1) + i32(3) + i64(42) + s("m"))
    assert_layout(msg, 2, expected, KpOffsetCommitRequest)


def test_offset_commit_v1_carries_the_commit_timestamp_per_partition() -> None:
    msg = _commit(generation_id_or_member_epoch=5, member_id="m1",
                  partition={"commit_timestamp": 1_700_000_000_000})
    expected = (s("g") + i32(5) + s("m1")
                + i32(1) + s("t") + i32(1) + i32(3) + i64(42) + i64(1_700_000_000_000) + s("m"))
    assert_layout(msg, 1, expected, KpOffsetCommitRequest)


def test_offset_commit_timestamp_is_refused_outside_v1() -> None:
    with pytest.raises(FieldVersionError, match="commit_timestamp"):
        _commit(partition={"commit_timestamp": 1}).encode(2)


def test_offset_commit_retention_time_is_dropped_silently_from_v5() -> None:
    assert _commit(retention_time_ms=1000).encode(5) == _commit().encode(5)


def test_offset_commit_v7_static_member_and_v6_leader_epoch() -> None:
    msg = _commit(generation_id_or_member_epoch=1, member_id="m", group_instance_id="i",
                  partition={"committed_leader_epoch": 9})
    expected = (s("g") + i32(1) + s("m") + s("i")
                + i32(1) + s("t") + i32(1) + i32(3) + i64(42) + i32(9) + s("m"))
    assert_layout(msg, 7, expected, KpOffsetCommitRequest)
    with pytest.raises(FeatureUnsupportedError, match=r"group_instance_id.*Kafka 2\.3"):
        msg.encode(6)


def test_offset_commit_v8_is_flexible() -> None:
    msg = _commit(member_id="m")
    expected = (cs("g") + i32(-1) + cs("m") + COMPACT_NULL
                + carr_len(1) + cs("t") + carr_len(1) + i32(3) + i64(42) + i32(-1) + cs("m")
                + NO_TAGS + NO_TAGS + NO_TAGS)
    assert_layout(msg, 8, expected, KpOffsetCommitRequest)
    assert msg.encode(9) == expected


# --- OffsetFetch ------------------------------------------------------------------------------


def test_offset_fetch_v8_asks_for_many_groups_in_one_request() -> None:
    msg = OffsetFetchRequest(groups=[
        OffsetFetchRequestGroup(group_id="g1", topics=None),
        OffsetFetchRequestGroup(group_id="g2", topics=[
            OffsetFetchRequestTopics(name="t", partition_indexes=[0, 2])]),
    ], require_stable=True)
    expected = (carr_len(2)
                + cs("g1") + COMPACT_NULL + NO_TAGS
                + cs("g2") + carr_len(1) + cs("t") + carr_len(2) + i32(0) + i32(2) + NO_TAGS + NO_TAGS
                + b"\x01" + NO_TAGS)
    assert_layout(msg, 8, expected, KpOffsetFetchRequest)


def test_offset_fetch_v9_adds_member_id_and_epoch_per_group() -> None:
    msg = OffsetFetchRequest(groups=[
        OffsetFetchRequestGroup(group_id="g", member_id="m", member_epoch=4, topics=None)])
    expected = carr_len(1) + cs("g") + cs("m") + i32(4) + COMPACT_NULL + NO_TAGS + b"\x00" + NO_TAGS
    assert_layout(msg, 9, expected, KpOffsetFetchRequest)
    assert msg.encode(8) == carr_len(1) + cs("g") + COMPACT_NULL + NO_TAGS + b"\x00" + NO_TAGS


def test_offset_fetch_single_group_form_is_refused_from_v8() -> None:
    msg = OffsetFetchRequest(group_id="g", topics=[
        OffsetFetchRequestTopic(name="t", partition_indexes=[1])])
    assert_layout(msg, 1, s("g") + i32(1) + s("t") + i32(1) + i32(1), KpOffsetFetchRequest)
    with pytest.raises(FieldVersionError, match="group_id"):
        msg.encode(8)


def test_offset_fetch_null_topics_means_all_topics_only_from_v2() -> None:
    msg = OffsetFetchRequest(group_id="g", topics=None)
    assert_layout(msg, 2, s("g") + NULL_ARRAY, KpOffsetFetchRequest)
    with pytest.raises(FeatureUnsupportedError, match=r"all its partitions.*Kafka 0\.10\.2"):
        msg.encode(1)


def test_offset_fetch_v7_response_has_leader_epoch_and_top_level_error() -> None:
    body = (i32(0) + carr_len(1) + cs("t") + carr_len(1)
            + i32(0) + i64(19) + i32(2) + COMPACT_NULL + i16(0) + NO_TAGS + NO_TAGS
            + i16(15) + NO_TAGS)
    resp = OffsetFetchResponse.decode(body, 7)
    part = resp.topics[0].partitions[0]
    assert (part.committed_offset, part.committed_leader_epoch, part.metadata) == (19, 2, None)
    assert resp.error_code == 15
    assert resp.encode(7) == body


# --- ListOffsets ------------------------------------------------------------------------------


def test_list_offsets_v0_request_asks_for_a_number_of_offsets() -> None:
    msg = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequestTopic(name="t", partitions=[
        ListOffsetsRequestPartition(partition_index=0, timestamp=LATEST_TIMESTAMP,
                                    max_num_offsets=5)])])
    expected = i32(-1) + i32(1) + s("t") + i32(1) + i32(0) + i64(-1) + i32(5)
    assert_layout(msg, 0, expected, KpListOffsetsRequest)
    with pytest.raises(FieldVersionError, match="max_num_offsets"):
        msg.encode(1)


def test_list_offsets_v0_response_answers_with_old_style_offsets() -> None:
    body = i32(1) + s("t") + i32(1) + i32(0) + i16(0) + i32(2) + i64(100) + i64(0)
    part = ListOffsetsResponse.decode(body, 0).topics[0].partitions[0]
    assert part.old_style_offsets == [100, 0]
    assert (part.timestamp, part.offset) == (-1, -1)


def test_list_offsets_v0_response_without_the_offsets_array_is_corrupt() -> None:
    body = i32(1) + s("t") + i32(1) + i32(0) + i16(0)
    with pytest.raises(CorruptFrame):
        ListOffsetsResponse.decode(body, 0)


def test_list_offsets_v4_adds_isolation_level_and_leader_epoch() -> None:
    msg = ListOffsetsRequest(replica_id=-1, isolation_level=READ_COMMITTED, topics=[
        ListOffsetsRequestTopic(name="t", partitions=[
            ListOffsetsRequestPartition(partition_index=1, current_leader_epoch=7,
                                        timestamp=-2)])])
    expected = i32(-1) + i8(1) + i32(1) + s("t") + i32(1) + i32(1) + i32(7) + i64(-2)
    assert_layout(msg, 4, expected, KpListOffsetsRequest)


# --- Fetch ------------------------------------------------------------------------------------


def test_fetch_v4_request_layout() -> None:
    msg = FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
                       isolation_level=READ_COMMITTED, topics=[FetchRequestTopic(
                           topic="t", partitions=[FetchRequestPartition(
                               partition=2, fetch_offset=77, partition_max_bytes=65536)])])
    expected = (i32(-1) + i32(500) + i32(1) + i32(1 << 20) + i8(1)
                + i32(1) + s("t") + i32(1) + i32(2) + i64(77) + i32(65536))
    assert_layout(msg, 4, expected, KpFetchRequest)


def test_fetch_v3_drops_the_isolation_level_but_v7_session_fields_are_positional() -> None:
    msg = FetchRequest(max_wait_ms=1, min_bytes=1, isolation_level=READ_COMMITTED)
    assert msg.encode(3) == i32(-1) + i32(1) + i32(1) + i32(0x7FFFFFFF) + i32(0)
    msg7 = attrs.evolve(msg, session_id=12, session_epoch=3, forgotten_topics_data=[
        FetchRequestForgottenTopic(topic="old", partitions=[4])])
    expected = (i32(-1) + i32(1) + i32(1) + i32(0x7FFFFFFF) + i8(1) + i32(12) + i32(3)
                + i32(0) + i32(1) + s("old") + i32(1) + i32(4))
    assert_layout(msg7, 7, expected, KpFetchRequest)
    with pytest.raises(FieldVersionError, match="forgotten_topics_data"):
        msg7.encode(6)


def test_fetch_v11_adds_rack_and_v12_last_fetched_epoch_in_flexible_form() -> None:
    part = FetchRequestPartition(partition=0, current_leader_epoch=3, fetch_offset=10,
                                 last_fetched_epoch=2, partition_max_bytes=100)
    msg = FetchRequest(max_wait_ms=1, min_bytes=1, rack_id="r1",
                       topics=[FetchRequestTopic(topic="t", partitions=[part])])
    head = i32(-1) + i32(1) + i32(1) + i32(0x7FFFFFFF) + i8(0) + i32(0) + i32(-1)
    with pytest.raises(FieldVersionError, match="last_fetched_epoch"):
        msg.encode(11)
    v11 = attrs.evolve(msg, topics=[FetchRequestTopic(
        topic="t", partitions=[attrs.evolve(part, last_fetched_epoch=-1)])])
    assert_layout(v11, 11, head + i32(1) + s("t") + i32(1) + i32(0) + i32(3) + i64(10)
                  + i64(-1) + i32(100) + i32(0) + s("r1"), KpFetchRequest)
    expected = (head + carr_len(1) + cs("t") + carr_len(1) + i32(0) + i32(3) + i64(10) + i32(2)
                + i64(-1) + i32(100) + NO_TAGS + NO_TAGS + carr_len(0) + cs("r1") + NO_TAGS)
    assert_layout(msg, 12, expected, KpFetchRequest)


def test_fetch_v13_names_topics_by_id_and_drops_the_name() -> None:
    msg = FetchRequest(max_wait_ms=1, min_bytes=1, topics=[FetchRequestTopic(
        topic="t", topic_id=TOPIC_ID, partitions=[])])
    expected = (i32(-1) + i32(1) + i32(1) + i32(0x7FFFFFFF) + i8(0) + i32(0) + i32(-1)
                + carr_len(1) + TOPIC_ID.bytes + carr_len(0) + NO_TAGS + carr_len(0) + cs("") + NO_TAGS)
    assert msg.encode(13) == expected
    assert FetchRequest.decode(expected, 13).topics[0].topic_id == TOPIC_ID


def test_fetch_v15_moves_the_replica_id_into_a_tagged_replica_state() -> None:
    state = FetchRequestReplicaState(replica_id=2, replica_epoch=9)
    msg = FetchRequest(replica_state=state, max_wait_ms=1, min_bytes=1, cluster_id="c")
    tags = (uv(2) + uv(0) + uv(2) + cs("c")
            + uv(1) + uv(13) + i32(2) + i64(9) + NO_TAGS)
    expected = (i32(1) + i32(1) + i32(0x7FFFFFFF) + i8(0) + i32(0) + i32(-1)
                + carr_len(0) + carr_len(0) + cs("") + tags)
    assert_layout(msg, 15, expected, KpFetchRequest)
    with pytest.raises(FieldVersionError, match="replica_id"):
        FetchRequest(replica_id=2).encode(15)
    with pytest.raises(FieldVersionError, match="replica_state"):
        msg.encode(14)


def test_fetch_v17_partition_carries_a_tagged_replica_directory_id() -> None:
    directory = uuid.UUID(int=7)
    part = FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1,
                                 replica_directory_id=directory)
    msg = FetchRequest(topics=[FetchRequestTopic(topic_id=TOPIC_ID, partitions=[part])])
    encoded = msg.encode(17)
    part_bytes = (i32(0) + i32(-1) + i64(0) + i32(-1) + i64(-1) + i32(1)
                  + uv(1) + uv(0) + uv(16) + directory.bytes)
    assert part_bytes in encoded
    assert FetchRequest.decode(encoded, 17) == msg
    assert part_bytes not in msg.encode(16)


def _fetch_response(partition: FetchResponsePartition, **kwargs: Any) -> FetchResponse:
    return FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[partition])],
                         **kwargs)


def test_fetch_v4_response_has_last_stable_offset_and_aborted_transactions() -> None:
    body = (i32(0) + i32(1) + s("t") + i32(1)
            + i32(0) + i16(0) + i64(50) + i64(40) + i32(1) + i64(7) + i64(30)
            + i32(3) + b"abc")
    part = FetchResponse.decode(body, 4).responses[0].partitions[0]
    assert (part.high_watermark, part.last_stable_offset) == (50, 40)
    assert part.aborted_transactions == [
        FetchResponseAbortedTransaction(producer_id=7, first_offset=30)]
    assert part.records == b"abc"


def test_fetch_response_null_aborted_transactions_and_null_records() -> None:
    body = (i32(0) + i32(1) + s("t") + i32(1)
            + i32(0) + i16(1) + i64(-1) + i64(-1) + NULL_ARRAY + i32(-1))
    part = FetchResponse.decode(body, 4).responses[0].partitions[0]
    assert part.aborted_transactions is None
    assert part.records is None
    assert part.error_code == 1


def test_fetch_v12_partition_tagged_fields_diverging_epoch_leader_snapshot() -> None:
    partition = FetchResponsePartition(
        partition_index=0, error_code=0, high_watermark=10,
        diverging_epoch=FetchResponseEpochEndOffset(epoch=3, end_offset=8),
        current_leader=FetchResponseLeaderIdAndEpoch(leader_id=1, leader_epoch=4),
        snapshot_id=FetchResponseSnapshotId(end_offset=5, epoch=2),
        records=b"")
    msg = _fetch_response(partition)
    tags = (uv(3)
            + uv(0) + uv(13) + i32(3) + i64(8) + NO_TAGS
            + uv(1) + uv(9) + i32(1) + i32(4) + NO_TAGS
            + uv(2) + uv(13) + i64(5) + i32(2) + NO_TAGS)
    expected = (i32(0) + i16(0) + i32(0) + carr_len(1) + cs("t") + carr_len(1)
                + i32(0) + i16(0) + i64(10) + i64(-1) + i64(-1) + carr_len(0) + i32(-1) + uv(1)
                + tags + NO_TAGS + NO_TAGS)
    assert_layout(msg, 12, expected, KpFetchResponse)
    with pytest.raises(FieldVersionError, match="diverging_epoch"):
        msg.encode(11)


def test_fetch_v16_response_has_tagged_node_endpoints() -> None:
    msg = FetchResponse(node_endpoints=[
        FetchResponseNodeEndpoint(node_id=1, host="h", port=9092, rack=None)])
    node = i32(1) + cs("h") + i32(9092) + COMPACT_NULL + NO_TAGS
    endpoints = carr_len(1) + node
    expected = (i32(0) + i16(0) + i32(0) + carr_len(0)
                + uv(1) + uv(0) + uv(len(endpoints)) + endpoints)
    assert_layout(msg, 16, expected, KpFetchResponse)
    with pytest.raises(FieldVersionError, match="node_endpoints"):
        msg.encode(15)


# --- Produce ----------------------------------------------------------------------------------


def _produce(**kwargs: Any) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=1500, topic_data=[ProduceRequestTopic(
        name="t", partition_data=[ProduceRequestPartition(index=1, records=b"RB")])], **kwargs)


def test_produce_v3_leads_with_the_transactional_id() -> None:
    expected = (s("tx") + i16(-1) + i32(1500)
                + i32(1) + s("t") + i32(1) + i32(1) + i32(2) + b"RB")
    assert_layout(_produce(transactional_id="tx"), 3, expected, KpProduceRequest)
    assert _produce().encode(3) == NULL_STRING + expected[len(s("tx")):]
    assert _produce().encode(2) == expected[len(s("tx")):]
    with pytest.raises(FeatureUnsupportedError, match=r"transactional_id.*Kafka 0\.11"):
        _produce(transactional_id="tx").encode(2)


def test_produce_v9_is_flexible() -> None:
    expected = (COMPACT_NULL + i16(-1) + i32(1500)
                + carr_len(1) + cs("t") + carr_len(1) + i32(1) + uv(3) + b"RB" + NO_TAGS + NO_TAGS
                + NO_TAGS)
    assert_layout(_produce(), 9, expected, KpProduceRequest)


def test_produce_v8_response_has_record_errors_and_error_message() -> None:
    body = (i32(1) + s("t") + i32(1)
            + i32(1) + i16(87) + i64(-1) + i64(-1) + i64(0)
            + i32(1) + i32(4) + s("bad") + s("invalid record") + i32(0))
    part = ProduceResponse.decode(body, 8).responses[0].partition_responses[0]
    assert part.error_code == 87
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (4, "bad")]
    assert part.error_message == "invalid record"


def test_produce_v10_response_has_tagged_current_leader_and_node_endpoints() -> None:
    msg = ProduceResponse(responses=[ProduceResponseTopic(name="t", partition_responses=[
        ProduceResponsePartition(index=0, error_code=6, base_offset=-1,
                                 current_leader=ProduceResponseLeaderIdAndEpoch(
                                     leader_id=2, leader_epoch=5))])],
        node_endpoints=[ProduceResponseNodeEndpoint(node_id=2, host="b2", port=9093,
                                                    rack="r")])
    endpoints = carr_len(1) + i32(2) + cs("b2") + i32(9093) + cs("r") + NO_TAGS
    expected = (carr_len(1) + cs("t") + carr_len(1)
                + i32(0) + i16(6) + i64(-1) + i64(-1) + i64(-1) + carr_len(0) + COMPACT_NULL
                + uv(1) + uv(0) + uv(9) + i32(2) + i32(5) + NO_TAGS
                + NO_TAGS + i32(0) + uv(1) + uv(0) + uv(len(endpoints)) + endpoints)
    assert msg.encode(10) == expected
    assert ProduceResponse.decode(expected, 10) == msg


# --- SASL -------------------------------------------------------------------------------------


def test_sasl_handshake_v1_layout() -> None:
    assert_layout(SaslHandshakeRequest(mechanism="PLAIN"), 1, s("PLAIN"), KpSaslHandshakeRequest)
    resp = SaslHandshakeResponse.decode(i16(0) + i32(2) + s("PLAIN") + s("SCRAM-SHA-256"), 1)
    assert resp.mechanisms == ["PLAIN", "SCRAM-SHA-256"]


def test_sasl_authenticate_v2_is_flexible() -> None:
    token = b"\x00user\x00pass"
    assert_layout(SaslAuthenticateRequest(auth_bytes=token), 2,
                  uv(len(token) + 1) + token + NO_TAGS, KpSaslAuthenticateRequest)
    assert SaslAuthenticateRequest(auth_bytes=token).encode(1) == i32(len(token)) + token
    body = i16(0) + COMPACT_NULL + uv(3) + b"ok" + i64(3_600_000) + NO_TAGS
    resp = SaslAuthenticateResponse.decode(body, 2)
    assert resp == SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=b"ok",
                                            session_lifetime_ms=3_600_000)
    assert resp.encode(2) == body


def test_sasl_authenticate_session_lifetime_starts_at_v1() -> None:
    v0 = i16(0) + NULL_STRING + i32(0)
    assert SaslAuthenticateResponse.decode(v0, 0).session_lifetime_ms == 0
    with pytest.raises(CorruptFrame):
        SaslAuthenticateResponse.decode(v0, 1)
    assert SaslAuthenticateResponse.decode(v0 + i64(60_000), 1).session_lifetime_ms == 60_000


# --- CreateTopics / DeleteTopics --------------------------------------------------------------


def test_create_topics_v1_request_layout() -> None:
    msg = CreateTopicsRequest(topics=[CreateTopicsRequestTopic(
        name="t", num_partitions=-1, replication_factor=-1,
        assignments=[CreateTopicsRequestAssignment(partition_index=0, broker_ids=[1, 2])],
        configs=[CreateTopicsRequestConfig(name="cleanup.policy", value="compact")])],
        timeout_ms=5000, validate_only=True)
    expected = (i32(1) + s("t") + i32(-1) + i16(-1)
                + i32(1) + i32(0) + i32(2) + i32(1) + i32(2)
                + i32(1) + s("cleanup.policy") + s("compact")
                + i32(5000) + b"\x01")
    assert_layout(msg, 1, expected, KpCreateTopicsRequest)
    with pytest.raises(FeatureUnsupportedError, match=r"validate_only.*Kafka 0\.10\.2"):
        msg.encode(0)


def test_create_topics_v7_response_has_topic_id_configs_and_tagged_config_error() -> None:
    msg = CreateTopicsResponse(topics=[CreateTopicsResponseTopic(
        name="t", topic_id=TOPIC_ID, error_code=0, error_message=None,
        topic_config_error_code=29, num_partitions=3, replication_factor=1,
        configs=[CreateTopicsResponseConfig(name="k", value=None, read_only=True,
                                            config_source=5, is_sensitive=False)])])
    expected = (i32(0) + carr_len(1) + cs("t") + TOPIC_ID.bytes + i16(0) + COMPACT_NULL
                + i32(3) + i16(1) + carr_len(1) + cs("k") + COMPACT_NULL + b"\x01" + i8(5) + b"\x00"
                + NO_TAGS + uv(1) + uv(0) + uv(2) + i16(29) + NO_TAGS)
    assert msg.encode(7) == expected
    assert CreateTopicsResponse.decode(expected, 7) == msg
    v5 = CreateTopicsResponse.decode(expected.replace(TOPIC_ID.bytes, b""), 5)
    assert v5.topics[0].topic_id == NULL_UUID
    assert v5.topics[0].configs == msg.topics[0].configs


def test_delete_topics_v6_names_topics_by_name_or_id() -> None:
    msg = DeleteTopicsRequest(topics=[DeleteTopicsRequestTopic(name="a"),
                                      DeleteTopicsRequestTopic(topic_id=TOPIC_ID)],
                              timeout_ms=100)
    expected = (carr_len(2) + cs("a") + NULL_UUID.bytes + NO_TAGS
                + COMPACT_NULL + TOPIC_ID.bytes + NO_TAGS + i32(100) + NO_TAGS)
    assert_layout(msg, 6, expected, KpDeleteTopicsRequest)
    with pytest.raises(FieldVersionError, match="topics"):
        msg.encode(5)


def test_delete_topics_names_array_up_to_v5() -> None:
    msg = DeleteTopicsRequest(topic_names=["a", "b"], timeout_ms=100)
    assert_layout(msg, 3, i32(2) + s("a") + s("b") + i32(100), KpDeleteTopicsRequest)
    assert_layout(msg, 4, carr_len(2) + cs("a") + cs("b") + i32(100) + NO_TAGS,
                  KpDeleteTopicsRequest)


def test_offset_delete_v0_request_names_group_topics_and_partitions() -> None:
    msg = OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0),
                              OffsetDeleteRequestPartition(partition_index=7)])])
    expected = s("g") + i32(1) + s("t") + i32(2) + i32(0) + i32(7)
    assert_layout(msg, 0, expected, KpOffsetDeleteRequest)


def test_offset_delete_v0_response_has_the_error_code_before_the_throttle_time() -> None:
    # Unlike most responses, OffsetDelete starts with the top-level error code.
    msg = OffsetDeleteResponse(error_code=0, throttle_time_ms=5, topics=[
        OffsetDeleteResponseTopic(name="t", partitions=[
            OffsetDeleteResponsePartition(partition_index=1, error_code=86)])])
    expected = i16(0) + i32(5) + i32(1) + s("t") + i32(1) + i32(1) + i16(86)
    assert_layout(msg, 0, expected, KpOffsetDeleteResponse)


# --- responses captured from a Tansu v0.6.0 broker --------------------------------------------

TANSU_RECORDS = bytes.fromhex(
    "00000000000000000000003affffffff02233dad4400000000000000000000000003e800000000000003e8"
    "ffffffffffffffffffffffffffff00000001100000000104686900")

TANSU_FETCH_V4 = bytes.fromhex(
    "00000000000000010002743700000001000000010000000000000000000100000000000000010000000000"
    "00004600000000000000000000003affffffff02233dad4400000000000000000000000003e80000000000"
    "0003e8ffffffffffffffffffffffffffff00000001100000000104686900")
TANSU_FETCH_V16 = bytes.fromhex(
    "000000000000000000000201a202579e737fc3972e8dcd0c74e42a0200000001000000000000000000010000"
    "000000000001000000000000000001ffffffff4700000000000000000000003affffffff02233dad44000000"
    "00000000000000000003e800000000000003e8ffffffffffffffffffffffffffff0000000110000000010468"
    "6900000001000101")


def test_tansu_fetch_v4_response() -> None:
    resp = FetchResponse.decode(TANSU_FETCH_V4, 4)
    part = resp.responses[0].partitions[0]
    assert resp.responses[0].topic == "t7"
    assert (part.partition_index, part.high_watermark, part.last_stable_offset) == (1, 1, 1)
    assert part.aborted_transactions == []
    assert part.records == TANSU_RECORDS


def test_tansu_fetch_v16_response_by_topic_id_with_empty_tagged_endpoints() -> None:
    resp = FetchResponse.decode(TANSU_FETCH_V16, 16)
    topic = resp.responses[0]
    assert (topic.topic, topic.topic_id) == ("", TOPIC_ID)
    assert topic.partitions[0].records == TANSU_RECORDS
    assert topic.partitions[0].log_start_offset == 0
    assert resp.node_endpoints == []


def test_tansu_offset_fetch_v8_response() -> None:
    body = bytes.fromhex(
        "00000000030367310203743702000000000000000000000013ffffffff0000000000000000036732020374"
        "370200000000ffffffffffffffffffffffff000000000000000000")
    groups = OffsetFetchResponse.decode(body, 8).groups
    assert [g.group_id for g in groups] == ["g1", "g2"]
    offsets = [(g.topics[0].name, g.topics[0].partitions[0].committed_offset) for g in groups]
    assert offsets == [("t7", 19), ("t7", -1)]


def test_tansu_list_offsets_v1_response() -> None:
    body = bytes.fromhex("000000010002743700000001000000000000000001a2025763890000000000000017")
    part = ListOffsetsResponse.decode(body, 1).topics[0].partitions[0]
    assert (part.error_code, part.timestamp, part.offset) == (0, 1795335611273, 23)


def test_tansu_produce_v9_response() -> None:
    body = bytes.fromhex(
        "02037437020000000000000000000000000012ffffffffffffffff0000000000000000010000000000000000")
    part = ProduceResponse.decode(body, 9).responses[0].partition_responses[0]
    assert (part.index, part.error_code, part.base_offset, part.log_start_offset) == (0, 0, 18, 0)


def test_tansu_offset_commit_v2_response() -> None:
    resp = OffsetCommitResponse.decode(bytes.fromhex("000000010002743700000001000000000000"), 2)
    assert resp.topics[0].name == "t7"
    assert resp.topics[0].partitions[0].error_code == 0


def test_tansu_create_topics_v7_response() -> None:
    body = bytes.fromhex(
        "000000000203743701a2025763827b82acac18f505e588b000000000000002000101010002000000")
    topic = CreateTopicsResponse.decode(body, 7).topics[0]
    assert (topic.name, topic.error_code, topic.num_partitions) == ("t7", 0, 2)
    assert topic.topic_id == uuid.UUID("01a20257-6382-7b82-acac-18f505e588b0")


def test_tansu_delete_topics_v6_response() -> None:
    body = bytes.fromhex("00000000020374360000000000000000000000000000000000000a4e6f206572726f722e0000")
    topic = DeleteTopicsResponse.decode(body, 6).responses[0]
    assert (topic.name, topic.error_code, topic.error_message) == ("t6", 0, "No error.")


def test_tansu_sasl_responses() -> None:
    handshake = SaslHandshakeResponse.decode(bytes.fromhex("0021000000010005504c41494e"), 1)
    assert (handshake.error_code, handshake.mechanisms) == (33, ["PLAIN"])
    body = bytes.fromhex(
        "00223352657175657374206973206e6f742076616c696420676976656e207468652063757272656e742053"
        "41534c2073746174652e01000000000000000000")
    auth = SaslAuthenticateResponse.decode(body, 2)
    assert auth.error_code == 34
    assert auth.error_message == "Request is not valid given the current SASL state."
    assert auth.auth_bytes == b""


# --- every field against Kafka's own definitions ----------------------------------------------

D_MESSAGES = [
    cls
    for req in (OffsetCommitRequest, OffsetFetchRequest, ListOffsetsRequest, FetchRequest,
                ProduceRequest, SaslHandshakeRequest, SaslAuthenticateRequest,
                CreateTopicsRequest, DeleteTopicsRequest, OffsetDeleteRequest)
    for cls in (req, req.Response)
]

_PRIMITIVES = {
    "int8": schema.INT8, "int16": schema.INT16, "int32": schema.INT32, "int64": schema.INT64,
    "string": schema.STRING, "bytes": schema.BYTES, "records": schema.RECORDS,
    "bool": schema.BOOL, "uuid": schema.UUID,
}


def _kafka_definition(name: str) -> dict[str, Any]:
    """Kafka's JSON message definition as shipped inside kafka-python (comments stripped)."""
    text = resources.files("kafka.protocol.schemas.resources").joinpath(f"{name}.json")
    return json.loads(re.sub(r"^\s*//.*$", "", text.read_text(), flags=re.MULTILINE))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name[0].upper() + name[1:]).lower()


def _expected_default(field: dict[str, Any]) -> Any:
    kind, given = field["type"], field.get("default")
    if kind.startswith("["):
        return None if given == "null" else []
    if kind == "string":
        return None if given == "null" else (given or "")
    if kind == "records":
        return None
    if kind == "bytes":
        return None if given == "null" else b""
    if kind == "bool":
        return given == "true"
    if kind == "uuid":
        return NULL_UUID
    if kind in _PRIMITIVES:
        return int(given, 0) if given else 0
    return None


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def _compare(fields: list[dict[str, Any]], cls: type, used: range, where: str) -> list[str]:
    """Differences between Kafka's ``fields`` and ``cls`` over the versions ``used``."""
    wanted = [fd for fd in fields if schema.parse_versions(fd["versions"])[0] <= used[-1]]
    mine = [a for a in attrs.fields(cls) if schema._SPEC in a.metadata]
    names = [_snake(fd["name"]) for fd in wanted]
    if names != [a.name for a in mine]:
        return [f"{where}: fields {[a.name for a in mine]}, Kafka has {names}"]
    problems = []
    for fd, a in zip(wanted, mine, strict=True):
        spec, at = a.metadata[schema._SPEC], f"{where}.{a.name}"
        versions, nullable = schema.parse_versions(fd["versions"]), fd.get("nullableVersions")
        present = [v for v in used if _within(versions, v)]
        if present != [v for v in used if _within(spec.versions, v)]:
            problems.append(f"{at}: versions differ")
        if [_within(schema.parse_versions(nullable), v) for v in present] != [
                _within(spec.nullable, v) for v in present]:
            problems.append(f"{at}: nullable versions differ")
        if fd.get("tag") != spec.tag:
            problems.append(f"{at}: tag differs")
        if (len(present) < len(used) or spec.tag is not None) and \
                fd.get("ignorable", False) != spec.ignorable:
            problems.append(f"{at}: ignorable differs")
        default = a.default.factory() if isinstance(a.default, attrs.Factory) else a.default
        if default != _expected_default(fd):
            problems.append(f"{at}: default {default!r}, Kafka's {_expected_default(fd)!r}")
        kind = fd["type"].removeprefix("[]")
        inner = spec.type.element if isinstance(spec.type, Array) else spec.type
        if fd["type"].startswith("[]") != isinstance(spec.type, Array):
            problems.append(f"{at}: array-ness differs")
        elif kind in _PRIMITIVES:
            # A record set is bytes on the wire; a Fetch answer reads its sets as views.
            if inner is not _PRIMITIVES[kind] and not (
                    kind == "records" and inner is schema.RECORD_VIEW):
                problems.append(f"{at}: type differs")
        else:
            struct_cls = inner if isinstance(spec.type, Array) else inner.cls
            problems += _compare(fd["fields"], struct_cls, range(present[0], present[-1] + 1), at)
    return problems


@pytest.mark.parametrize("cls", D_MESSAGES, ids=lambda c: c.__name__)
def test_every_field_matches_kafkas_definition(cls: type[Message]) -> None:
    definition = _kafka_definition(cls.__name__)
    flexible = schema.parse_versions(definition["flexibleVersions"])
    assert (flexible[0] if flexible else None) == cls.FLEXIBLE_FROM
    assert schema.parse_versions(definition["validVersions"])[1] >= cls.MAX_VERSION
    used = range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
    assert _compare(definition["fields"], cls, used, cls.__name__) == []
