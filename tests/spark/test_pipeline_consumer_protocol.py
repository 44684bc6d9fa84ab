"""SparkPipeline with ``group_protocol="consumer"`` (KIP-848) on confluent-kafka's mock cluster,
the one broker here with ConsumerGroupHeartbeat: the pipeline is a GroupConsumer, so the
protocol is one setting. When a confluent-kafka member (``group.protocol=consumer``) joins, the
partition the broker moves is revoked from the pipeline, which first turns the batch in flight
into a Kafka-schema DataFrame, processes it and commits it; the newcomer reads on from there,
with nothing lost or read twice."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest

from assignors import TopicPartition
from groupkit import Admin
from groupkit.spark import SparkPipeline
from tests.spark.kafka_schema import SPARK_KAFKA_SCHEMA
from tests.support.mock_cluster import MockCluster
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("spark")

WAIT = 60.0


@pytest.fixture
def mock() -> Iterator[MockCluster]:
    with MockCluster(heartbeat_interval_ms=300) as cluster:
        yield cluster


def _committed(servers: str, group: str, topic: str) -> dict[int, int]:
    with Admin(bootstrap_servers=servers) as admin:
        found = admin.list_group_offsets(group, [TopicPartition(topic, p) for p in range(2)])
    return {tp.partition: c.offset for tp, c in found.items()}


def test_a_consumer_protocol_pipeline_finishes_its_batch_when_a_partition_moves(
        spark: Any, mock: MockCluster) -> None:
    servers, topic, group = mock.bootstrap_servers, "spark-kip848", "spark-kip848"
    mock.create_topic(topic, 2)
    mock.produce(topic, (b"a%d" % i for i in range(60)), partitions=2)
    frames: list[tuple[int, int]] = []
    rows: list[tuple[int, int]] = []
    schemas: list[Any] = []

    class Recorder(SparkPipeline):
        def process_dataframe(self, df: Any, batch_id: int) -> None:
            schemas.append(df.schema)
            got = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
            frames.append((batch_id, len(got)))
            rows.extend(got)

    # Neither batch limit is reached: only a revocation (or the stop) finishes a batch.
    pipeline = Recorder(spark=spark, topics=[topic], group_id=group, bootstrap_servers=servers,
                        group_protocol="consumer", auto_offset_reset="earliest",
                        batch_max_records=1000, batch_max_interval_ms=600_000)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            pipeline.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    peer = None
    seen_by_peer: list[tuple[int, int]] = []
    try:
        wait_for(lambda: len(pipeline._pending) == 60 or bool(failure), WAIT,
                 "the pipeline to hold the first 60 records in its batch")
        assert not failure, failure
        assert frames == [] and _committed(servers, group, topic) == {}

        peer = confluent_kafka.Consumer({
            "bootstrap.servers": servers, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0})
        peer.subscribe([topic])

        def peer_reads() -> None:
            message = peer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                seen_by_peer.append((message.partition(), message.offset()))
                peer.commit(message=message, asynchronous=False)

        wait_for(lambda: len(peer.assignment()) == 1, WAIT, "the new member to get a partition",
                 step=peer_reads)
        # The pipeline gave the partition up only after finishing its batch and committing it.
        assert frames == [(0, 60)] and not failure, (frames, failure)
        assert _committed(servers, group, topic) == {0: 30, 1: 30}
        [moved] = [tp.partition for tp in peer.assignment()]
        mock.produce(topic, (b"b%d" % i for i in range(60)), partitions=2)
        wait_for(lambda: len(seen_by_peer) >= 30, WAIT, "the new member to read its 30",
                 step=peer_reads)
        wait_for(lambda: len(pipeline._pending) == 30, WAIT,
                 "the pipeline to hold the 30 new records of the partition it kept")
    finally:
        pipeline.stop()
        thread.join(30)
        if peer is not None:
            peer.close()
    assert not thread.is_alive() and not failure, failure
    assert all(schema == SPARK_KAFKA_SCHEMA for schema in schemas)
    # The partition moved once and was read on from the pipeline's commit; the other stayed.
    assert {p for p, _ in seen_by_peer} == {moved}
    everything = rows + seen_by_peer
    assert len(everything) == len(set(everything)) == 120, "a record was lost or read twice"
    assert set(everything) == {(p, o) for p in range(2) for o in range(60)}
    assert _committed(servers, group, topic) == {0: 60, 1: 60}
