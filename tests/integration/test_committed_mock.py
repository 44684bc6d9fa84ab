"""Commit metadata and leader epoch round trips on the second real broker, librdkafka's mock
cluster (Tansu drops both: tests/runtime/test_committed_values.py checks them with bytes).

groupkit commits an OffsetAndMetadata and reads it back, and a confluent-kafka consumer of the
same group reads the same; the other way round, groupkit reads what confluent-kafka committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from assignors import TopicPartition
from groupkit import Consumer
from groupkit.values import OffsetAndMetadata

pytestmark = pytest.mark.xdist_group("mock-cluster")


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[tuple[object, str]]:
    """A three-broker mock cluster (alive as long as its producer) and its bootstrap list."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 3, "bootstrap.servers": "",
                                         "log_level": 0})
    brokers = producer.list_topics(timeout=10).brokers.values()
    yield producer, ",".join(f"{b.host}:{b.port}" for b in brokers)
    producer.flush(5)


def _topic(producer: object) -> str:
    """A topic the mock creates by producing to it (4 partitions)."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    for i in range(8):
        producer.produce(topic, value=b"r", partition=i % 4)  # type: ignore[attr-defined]
    assert producer.flush(10) == 0  # type: ignore[attr-defined]
    return topic


def test_metadata_and_leader_epoch_committed_by_groupkit_read_back_by_both_clients(
        mock_cluster: tuple[object, str]) -> None:
    import confluent_kafka

    producer, bootstrap = mock_cluster
    topic, group = _topic(producer), f"g-{uuid.uuid4().hex[:8]}"
    tp0, tp1, tp2 = (TopicPartition(topic, p) for p in range(3))
    # Leader epoch 0: the mock's partitions are in their first epoch, and it refuses a commit
    # naming a later one with UNKNOWN_LEADER_EPOCH (docs/test-brokers.md).
    with Consumer(bootstrap_servers=bootstrap, group_id=group) as consumer:
        consumer.assign([tp0, tp1])
        consumer.commit({tp0: OffsetAndMetadata(4, "batch 17", leader_epoch=0), tp1: 2},
                        timeout=10)
        found = consumer.committed([tp0, tp1, tp2], timeout=10)
    assert found[tp0] == OffsetAndMetadata(4, "batch 17", leader_epoch=0)
    assert found[tp1] is not None and (found[tp1].offset, found[tp1].metadata) == (2, "")
    assert found[tp2] is None
    peer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                     "log_level": 0})
    try:
        [read] = peer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
    finally:
        peer.close()
    assert (read.offset, read.metadata, read.leader_epoch) == (4, "batch 17", 0)


def test_metadata_committed_by_confluent_kafka_is_read_by_groupkit(
        mock_cluster: tuple[object, str]) -> None:
    import confluent_kafka

    producer, bootstrap = mock_cluster
    topic, group = _topic(producer), f"g-{uuid.uuid4().hex[:8]}"
    peer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                     "enable.auto.commit": False, "log_level": 0})
    try:
        peer.commit(offsets=[confluent_kafka.TopicPartition(topic, 1, 3, "from librdkafka", 0)],
                    asynchronous=False)
    finally:
        peer.close()
    with Consumer(bootstrap_servers=bootstrap, group_id=group) as consumer:
        found = consumer.committed([TopicPartition(topic, 1)], timeout=10)[TopicPartition(topic, 1)]
    assert found is not None and (found.offset, found.leader_epoch) == (3, 0)
    # confluent-kafka 2.16 (librdkafka 2.16.0) sends the metadata with its C string's closing
    # NUL; librdkafka reads it back as a C string and does not show it. groupkit, as the Java
    # client, hands back the string the broker holds.
    assert found.metadata.removesuffix("\x00") == "from librdkafka"
