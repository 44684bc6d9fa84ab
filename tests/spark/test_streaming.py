"""Streaming reads: availableNow runs, the group commit of completed batches, restarts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit import Admin
from groupkit.spark import await_commits
from tests.support.spark_topics import write

pytestmark = pytest.mark.xdist_group("spark")


def _stream(spark: Any, servers: str, topic: str, **options: str) -> Any:
    reader = (spark.readStream.format("groupkit-kafka")
              .option("kafka.bootstrap.servers", servers).option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _run_available_now(df: Any, sink: Path, checkpoint: Path,
                       columns: tuple[str, ...] = ("partition", "offset", "value"),
                       wait_for_listener: bool = True) -> Any:
    query = (df.selectExpr(*columns).writeStream.format("parquet")
             .option("path", str(sink)).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120), "the availableNow run did not finish in 120 s"
    assert query.exception() is None
    if wait_for_listener:
        await_commits(query, 30)
    return query


def _sink(spark: Any, sink: Path) -> list[tuple[int, int, bytes]]:
    return sorted((r.partition, r.offset, bytes(r.value))
                  for r in spark.read.parquet(str(sink)).collect())


def _committed(servers: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    with Admin(bootstrap_servers=servers) as admin:
        found = admin.list_group_offsets(group, [TopicPartition(topic, p)
                                                 for p in range(partitions)])
    return {tp.partition: c.offset for tp, c in found.items()}


def test_available_now_reads_everything_once_and_commits_the_log_end(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str], tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=4, batches=6, per_batch=25)
    group = unique_name("lake")
    options = {"startingOffsets": "earliest", "kafka.group.id": group,
               "maxOffsetsPerTrigger": "170"}
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    query = _run_available_now(_stream(spark, servers, topic, **options), sink, checkpoint,
                               wait_for_listener=False)
    # 600 records at most 170 per trigger: four batches, the last one committed too, and
    # before awaitTermination() returned (Spark asks the source for the next end after it).
    assert _committed(servers, group, topic, 4) == dict.fromkeys(range(4), 150)
    assert query.lastProgress["batchId"] == 3
    expected = [(p, o, f"{p}-{o}".encode()) for p in range(4) for o in range(150)]
    assert _sink(spark, sink) == expected
    assert _committed(servers, group, topic, 4) == dict.fromkeys(range(4), 150)

    # More records, then a restart from the checkpoint: it continues where it stopped.
    write(servers, topic, 4, batches=2, per_batch=10, first=150)
    _run_available_now(_stream(spark, servers, topic, **options), sink, checkpoint)
    expected = [(p, o, f"{p}-{o}".encode()) for p in range(4) for o in range(170)]
    assert _sink(spark, sink) == expected
    assert _committed(servers, group, topic, 4) == dict.fromkeys(range(4), 170)


def test_starting_offsets_group_starts_where_the_group_is(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str], tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=2, batches=2, per_batch=10)
    group = unique_name("g")
    with Admin(bootstrap_servers=servers) as admin:
        admin.list_topics()
    # The group has an offset for partition 0 only; partition 1 falls back to earliest.
    from groupkit import Consumer
    with Consumer(bootstrap_servers=servers, group_id=group, enable_auto_commit=False) as c:
        c.commit({TopicPartition(topic, 0): 12})
    df = _stream(spark, servers, topic, startingOffsets="group", **{"kafka.group.id": group},
                 startingOffsetsFallback="earliest")
    _run_available_now(df, tmp_path / "sink", tmp_path / "checkpoint")
    got = _sink(spark, tmp_path / "sink")
    assert got == [(0, o, f"0-{o}".encode()) for o in range(12, 20)] + \
        [(1, o, f"1-{o}".encode()) for o in range(20)]
    assert _committed(servers, group, topic, 2) == {0: 20, 1: 20}


def test_partitions_that_appear_are_read_from_their_earliest_offset(
        spark: Any, kafka_broker: Any, unique_name: Callable[[str], str], tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    prefix = unique_name("pat").replace("-", "_")
    # subscribePattern: a topic created later brings new partitions into the stream.
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([f"{prefix}.a"], num_partitions=2)
    write(servers, f"{prefix}.a", 2, batches=2, per_batch=5)
    options = {"subscribePattern": rf"{prefix}\..*", "startingOffsets": "earliest"}
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    reader = spark.readStream.format("groupkit-kafka").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        reader = reader.option(k, v)
    _run_available_now(reader.load(), sink, checkpoint, ("topic", "partition", "offset"))
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([f"{prefix}.b"], num_partitions=1)
    write(servers, f"{prefix}.b", 1, batches=3, per_batch=4)
    _run_available_now(reader.load(), sink, checkpoint, ("topic", "partition", "offset"))
    rows = spark.read.parquet(str(sink)).groupBy("topic").count().collect()
    assert {r.topic: r["count"] for r in rows} == {f"{prefix}.a": 20, f"{prefix}.b": 12}


def test_a_recreated_topic_is_data_loss_unless_fail_on_data_loss_is_false(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=1, batches=2, per_batch=10)
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    _run_available_now(_stream(spark, servers, topic, startingOffsets="earliest"), sink,
                       checkpoint)
    with Admin(bootstrap_servers=servers) as admin:
        admin.delete_topics([topic])
        admin.create_topics([topic], num_partitions=1)
    write(servers, topic, 1, batches=1, per_batch=5)
    df = _stream(spark, servers, topic, startingOffsets="earliest")
    query = (df.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    with pytest.raises(Exception, match="failOnDataLoss=false"):
        query.awaitTermination(120)
    df = _stream(spark, servers, topic, startingOffsets="earliest", failOnDataLoss="false")
    query = (df.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None


def test_a_running_stream_commits_each_completed_batch(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str], tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=2, batches=1, per_batch=10)
    group = unique_name("run")
    df = _stream(spark, servers, topic, startingOffsets="earliest",
                 **{"kafka.group.id": group, "includeHeaders": "true"})
    query = (df.selectExpr("partition", "offset", "headers[0].key as h").writeStream
             .format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        _wait_for(lambda: _committed(servers, group, topic, 2) == {0: 10, 1: 10}, 60)
        write(servers, topic, 2, batches=1, per_batch=5, first=10)
        _wait_for(lambda: _committed(servers, group, topic, 2) == {0: 15, 1: 15}, 60)
    finally:
        query.stop()
    rows = sorted((r.partition, r.offset, r.h) for r in spark.read.parquet(
        str(tmp_path / "sink")).collect())
    assert rows == [(p, o, "h") for p in range(2) for o in range(15)]


def _wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not reached within {timeout} s"
        time.sleep(0.3)
