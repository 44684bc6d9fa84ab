"""Option checking of the groupkit-kafka source (pure Python, no Spark needed), and that
``import groupkit`` does not load Spark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assignors import TopicPartition
from groupkit.errors import ConfigError
from groupkit.spark.options import SourceOptions

BASE = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "events"}


def parse(streaming: bool | None = True, **extra: str) -> SourceOptions:
    return SourceOptions.parse({**BASE, **extra}, streaming=streaming)


def test_import_groupkit_loads_neither_pyspark_nor_pyarrow() -> None:
    code = ("import sys, groupkit; groupkit.Consumer; groupkit.GroupConsumer; groupkit.Admin;"
            " print(sorted(m for m in sys.modules if m.split('.')[0] in"
            " ('pyspark', 'pyarrow', 'groupkit') and (m.startswith('groupkit.spark')"
            " or not m.startswith('groupkit'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_options_are_spark_kafka_source_names_case_insensitive() -> None:
    o = SourceOptions.parse({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "Subscribe": "a, b",
                             "STARTINGOFFSETS": "group", "kafka.group.id": "g",
                             "maxOffsetsPerTrigger": "50", "failOnDataLoss": "False",
                             "includeHeaders": "true", "kafka.request.timeout.ms": "5000",
                             "kafka.client.id": "lake"}, streaming=True)
    assert o.topics == ("a", "b")
    assert o.starting == "group" and o.group_id == "g"
    assert o.max_offsets_per_trigger == 50
    assert o.fail_on_data_loss is False and o.include_headers is True
    assert o.settings == {"bootstrap_servers": "h:1", "request_timeout_ms": 5000,
                          "client_id": "lake"}


def test_per_partition_json_and_assign() -> None:
    o = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "assign": '{"t": [1, 0]}',
                             "startingOffsets": '{"t": {"0": 5, "1": -2}}',
                             "endingOffsets": '{"t": {"0": 9, "1": -1}}'}, streaming=False)
    assert o.assigned == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert o.starting == {TopicPartition("t", 0): 5, TopicPartition("t", 1): -2}
    assert o.ending == {TopicPartition("t", 0): 9, TopicPartition("t", 1): -1}


@pytest.mark.parametrize(("extra", "streaming", "message"), [
    ({"startingOffset": "earliest"}, True, "unknown option 'startingoffset'"),
    ({"kafka.no.such.setting": "1"}, True, "unknown option kafka.no.such.setting"),
    ({"kafka.auto.offset.reset": "earliest"}, True, "kafka.auto.offset.reset cannot be set"),
    ({"kafka.enable.auto.commit": "true"}, True, "kafka.enable.auto.commit cannot be set"),
    ({"minPartitions": "4"}, True, "minpartitions of Spark's Kafka source is not supported"),
    ({"subscribePattern": "e.*"}, True, "exactly one of the options subscribe"),
    ({"startingOffsets": "group"}, True, "startingOffsets=group needs the option kafka.group"),
    ({"startingOffsets": "middle"}, True, "startingOffsets must be one of earliest"),
    ({"startingOffsets": '{"t": {"x": 1}}'}, True, "is not a partition number"),
    ({"endingOffsets": "latest"}, True, "endingOffsets is for batch reads"),
    ({"maxOffsetsPerTrigger": "0"}, True, "maxOffsetsPerTrigger must be a positive integer"),
    ({"maxOffsetsPerTrigger": "5"}, False, "maxOffsetsPerTrigger is for streams only"),
    ({"failOnDataLoss": "yes"}, True, "failOnDataLoss must be 'true' or 'false'"),
    ({"startingOffsets": "latest"}, False, "startingOffsets=latest makes an empty batch"),
    ({"startingOffsetsFallback": "middle"}, True, "startingOffsetsFallback must be"),
    ({"kafka.request.timeout.ms": "soon"}, True, "kafka.request.timeout.ms must be an integer"),
    ({"kafka.bootstrap.servers": "nohost"}, True, "is not host:port"),
    ({"kafka.isolation.level": "read_committed"}, True, "only read_uncommitted is supported"),
])
def test_bad_options_raise_config_error_naming_them(extra: dict[str, str], streaming: bool,
                                                    message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(streaming, **extra)


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(ConfigError, match="kafka.bootstrap.servers is required"):
        SourceOptions.parse({"subscribe": "t"}, streaming=True)


def test_arrow_batches_keep_each_record_partition() -> None:
    from groupkit.consumer import ConsumerRecord
    from groupkit.spark.records import to_arrow

    records = [ConsumerRecord(offset=o, timestamp=1_700_000_000_000 + o, key=None,
                              value=b"v%d" % o, topic=t, partition=p)
               for o, (t, p) in enumerate([("a", 0), ("b", 1), ("b", 1), ("a", 0)])]
    batch = to_arrow(records, include_headers=False)
    assert batch.column("topic").to_pylist() == ["a", "b", "b", "a"]
    assert batch.column("partition").to_pylist() == [0, 1, 1, 0]
    assert batch.column("timestamp")[1].value == (1_700_000_000_000 + 1) * 1000


def test_a_pattern_never_matches_kafka_internal_topics() -> None:
    from types import SimpleNamespace

    from groupkit.spark.offsets import SourceCluster

    options = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribePattern": ".*"},
                                  streaming=True)
    cluster = SourceCluster(options)
    cluster._admin = SimpleNamespace(  # type: ignore[assignment]
        list_topics=lambda: {"events": 2, "__consumer_offsets": 50, "__transaction_state": 3})
    assert cluster.partitions() == {TopicPartition("events", 0), TopicPartition("events", 1)}
