"""Admin's offset writes and log ends on the local broker, read back with kafka-python."""

from __future__ import annotations

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.errors import ConfigError, FeatureUnsupportedError
from groupkit.values import OffsetAndMetadata
from tests.support.broker_data import committed_by_peer, make_batched_topic

WAIT = 20.0


@pytest.fixture(scope="module")
def admin(kafka_broker):
    with Admin(bootstrap_servers=kafka_broker.bootstrap_servers) as a:
        yield a


def test_log_end_is_the_next_offset_to_be_written_across_several_batches(
        kafka_broker, admin, unique_name) -> None:
    topic = unique_name("ends")
    ends = make_batched_topic(kafka_broker.bootstrap_servers, topic,
                              {0: [100, 100, 100], 1: [7], 2: []})
    truth = {TopicPartition(topic, p): end for p, end in ends.items()}
    assert truth[TopicPartition(topic, 0)] == 300
    assert admin.log_end_offsets(list(truth)) == truth


def test_altered_offsets_are_what_a_peer_client_reads_back(
        kafka_broker, admin, unique_name) -> None:
    topic, group = unique_name("alter"), unique_name("g")
    admin.create_topics([topic], num_partitions=2)
    admin.alter_consumer_group_offsets(group, {
        TopicPartition(topic, 0): 5,
        TopicPartition(topic, 1): OffsetAndMetadata(9, metadata="moved by test")})
    assert committed_by_peer(kafka_broker.bootstrap_servers, group, topic, 2) == {0: 5, 1: 9}


def test_alter_refuses_negative_offsets_and_no_partitions(admin) -> None:
    with pytest.raises(ConfigError, match=">= 0"):
        admin.alter_consumer_group_offsets("g", {TopicPartition("t", 0): -1})
    with pytest.raises(ConfigError, match="at least one partition"):
        admin.alter_consumer_group_offsets("g", {})
    with pytest.raises(ConfigError, match="at least one partition"):
        admin.delete_consumer_group_offsets("g", [])


def test_delete_offsets_on_a_broker_without_offset_delete_says_so(admin, unique_name) -> None:
    # Tansu 0.6 does not offer API 47; the request itself is tested against a fake broker
    # (tests/runtime/test_admin_offset_delete.py).
    with pytest.raises(FeatureUnsupportedError, match=r"OffsetDelete \(API key 47\).*Kafka 2\.4"):
        admin.delete_consumer_group_offsets(unique_name("g"), [TopicPartition("t", 0)])


def test_a_consumer_commit_sends_the_metadata_of_an_offset_and_metadata(
        kafka_broker, admin, unique_name) -> None:
    # The local broker does not keep commit metadata (it answers null), so what is checked is
    # the OffsetCommit request itself, captured on its way to the broker.
    from groupkit.consumer import Consumer
    from groupkit.errors import ApiKey
    from groupkit.protocol.headers import decode_request_frame
    from groupkit.protocol.messages.offset_commit import OffsetCommitRequest
    from tests.support.recording_proxy import RecordingProxy

    topic, group = unique_name("meta"), unique_name("g")
    admin.create_topics([topic], num_partitions=2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with RecordingProxy(kafka_broker.host, kafka_broker.port) as proxy:
        consumer = Consumer(bootstrap_servers=proxy.bootstrap_servers, group_id=group)
        try:
            consumer.assign([tp0, tp1])
            consumer.commit({tp0: OffsetAndMetadata(4, metadata="batch 17", leader_epoch=3),
                             tp1: 2}, timeout=WAIT)
        finally:
            consumer.close()
        commits = [decode_request_frame(e.request)[1] for e in proxy.exchanges()
                   if e.api_key == ApiKey.OFFSET_COMMIT]
    assert len(commits) == 1 and isinstance(commits[0], OffsetCommitRequest)
    sent = {(t.name, p.partition_index): (p.committed_offset, p.committed_metadata,
                                          p.committed_leader_epoch)
            for t in commits[0].topics for p in t.partitions}
    assert sent == {(topic, 0): (4, "batch 17", 3), (topic, 1): (2, "", -1)}
    assert {tp: o.offset for tp, o in admin.list_group_offsets(group).items()} == {tp0: 4, tp1: 2}
