"""Batch reads through the groupkit-kafka source against the local broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql.types import StructType

from tests.spark.kafka_schema import SPARK_KAFKA_HEADERS, SPARK_KAFKA_SCHEMA

pytestmark = pytest.mark.xdist_group("spark")


def _read(spark: Any, servers: str, topic: str, **options: str) -> Any:
    reader = (spark.read.format("groupkit-kafka")
              .option("kafka.bootstrap.servers", servers).option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_schema_equals_the_spark_kafka_source_schema(spark: Any, kafka_broker: Any,
                                                     topic_with_batches: Callable[..., str]
                                                     ) -> None:
    topic = topic_with_batches(partitions=1, batches=1, per_batch=3)
    servers = kafka_broker.bootstrap_servers
    df = _read(spark, servers, topic)
    assert df.schema == SPARK_KAFKA_SCHEMA
    with_headers = _read(spark, servers, topic, includeHeaders="true")
    assert with_headers.schema == StructType([*SPARK_KAFKA_SCHEMA.fields, SPARK_KAFKA_HEADERS])
    rows = with_headers.orderBy("offset").collect()
    assert [r.value for r in rows] == [b"0-0", b"0-1", b"0-2"]
    assert rows[0].headers[0].key == "h" and rows[0].headers[0].value == b"v"
    assert rows[0].key == b"k0" and rows[0].topic == topic and rows[0].partition == 0


def test_batch_read_reads_every_record_to_the_true_log_end(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str]) -> None:
    # 4 partitions x 5 batches x 20 records: ListOffsets "latest" on the local broker answers
    # 81 per partition here; the read must still end at 100.
    topic = topic_with_batches(partitions=4, batches=5, per_batch=20)
    df = _read(spark, kafka_broker.bootstrap_servers, topic)
    counts = {r.partition: (r["count"], r["lo"], r["hi"]) for r in df.groupBy("partition").agg(
        {"offset": "min", "*": "count"}).withColumnRenamed("min(offset)", "lo")
        .withColumnRenamed("count(1)", "count").selectExpr("partition", "count", "lo",
                                                           "lo + count - 1 as hi").collect()}
    assert counts == {p: (100, 0, 99) for p in range(4)}
    values = {r.value for r in df.select("value").collect()}
    assert values == {f"{p}-{n}".encode() for p in range(4) for n in range(100)}


def test_batch_read_with_ending_offsets_stops_there(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str]) -> None:
    topic = topic_with_batches(partitions=2, batches=3, per_batch=10)
    starting = json.dumps({topic: {"0": 5, "1": -2}})
    ending = json.dumps({topic: {"0": 25, "1": -1}})
    df = _read(spark, kafka_broker.bootstrap_servers, topic, startingOffsets=starting,
               endingOffsets=ending)
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 25)] + [(1, o) for o in range(30)]


def test_unknown_option_fails_at_load_naming_it(spark: Any, kafka_broker: Any) -> None:
    with pytest.raises(Exception, match="unknown option 'startingoffset'"):
        _read(spark, kafka_broker.bootstrap_servers, "any", startingOffset="earliest")


def test_a_topic_without_records_reads_as_an_empty_dataframe(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str]) -> None:
    topic = topic_with_batches(partitions=2, batches=0)
    df = _read(spark, kafka_broker.bootstrap_servers, topic)
    assert df.count() == 0


def test_assign_reads_only_the_named_partitions(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str]) -> None:
    topic = topic_with_batches(partitions=3, batches=2, per_batch=5)
    df = (spark.read.format("groupkit-kafka")
          .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
          .option("assign", json.dumps({topic: [2, 0]})).load())
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10)] + [(2, o) for o in range(10)]
