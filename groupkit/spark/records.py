"""Records as Spark sees them: the Kafka source's schema, Arrow batches, and reading a range.

The schema is that of Spark's own Kafka source (``KafkaRecordToRowConverter`` in
spark-sql-kafka): key binary, value binary, topic string, partition int, offset long, timestamp
timestamp, timestampType int, and with ``includeHeaders`` headers array<struct<key string, value
binary>>; every field nullable. Executors read an offset range with groupkit's Consumer
(``assign``, no group membership) and hand Spark Arrow record batches, column by column.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from assignors import TopicPartition
from groupkit.consumer import Consumer, ConsumerRecord
from groupkit.errors import NoOffsetForPartitionError, RequestTimeoutError
from groupkit.runtime.gc_pause import gc_paused
from groupkit.spark.offsets import DataLossError

__all__ = ["OffsetRange", "arrow_schema", "read_range", "spark_schema_ddl", "to_arrow"]

log = logging.getLogger(__name__)

_HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    # Spark's TimestampType in Arrow: microseconds, UTC (what its Arrow conversion declares).
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
_SCHEMA = pa.schema(_FIELDS)
_SCHEMA_HEADERS = pa.schema([*_FIELDS, pa.field("headers", pa.list_(_HEADER))])
_DDL = ("key binary, value binary, topic string, partition int, offset long,"
        " timestamp timestamp, timestampType int")
#: Records per poll on executors: big answers, few Python round trips.
_POLL_RECORDS = 10000


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the source's batches."""
    return _SCHEMA_HEADERS if include_headers else _SCHEMA


def spark_schema_ddl(include_headers: bool) -> str:
    """The source's schema as Spark DDL."""
    headers = ", headers array<struct<key: string, value: binary>>" if include_headers else ""
    return _DDL + headers


def to_arrow(records: Sequence[ConsumerRecord], include_headers: bool,
             source: TopicPartition | None = None) -> pa.RecordBatch:
    """One Arrow record batch of ``records`` in the source's schema; ``source`` says that every
    record comes from that one partition (an executor's range), which saves two columns' work.

    The column lists allocate as many objects as there are records and make no cycles, so the
    cyclic collector is paused meanwhile, as for decoding (``groupkit.runtime.gc_pause``)."""
    with gc_paused():
        return _columns(records, include_headers, source)


def _columns(records: Sequence[ConsumerRecord], include_headers: bool,
             source: TopicPartition | None) -> pa.RecordBatch:
    n = len(records)
    if n == 0:
        return pa.RecordBatch.from_pylist([], schema=arrow_schema(include_headers))
    if source is not None:
        topics = pa.repeat(pa.scalar(source.topic, pa.string()), n)
        partitions = pa.repeat(pa.scalar(source.partition, pa.int32()), n)
    else:
        topics = pa.array([r.topic for r in records], pa.string())
        partitions = pa.array([r.partition for r in records], pa.int32())
    millis = pa.array([r.timestamp for r in records], pa.int64())
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        topics,
        partitions,
        pa.array([r.offset for r in records], pa.int64()),
        pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    if include_headers:
        columns.append(pa.array(
            [[{"key": k, "value": v} for k, v in r.headers] for r in records],
            pa.list_(_HEADER)))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


@attrs.frozen
class OffsetRange:
    """Records ``start`` up to (not including) ``end`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def read_range(settings: dict[str, Any], span: OffsetRange, fail_on_data_loss: bool,
               poll_timeout_ms: int) -> Iterator[list[ConsumerRecord]]:
    """The records of ``span`` in chunks, read with a Consumer that only assigns.

    Records the log no longer holds (deleted, truncated: the broker answers OFFSET_OUT_OF_RANGE)
    raise DataLossError, or with ``fail_on_data_loss`` False are skipped with a warning. Gaps
    inside the range (compaction, transaction markers) are normal and skipped silently; Spark's
    Kafka source calls them data loss, which makes compacted topics need failOnDataLoss=false.
    """
    if span.start >= span.end:
        return
    consumer = Consumer(**{**settings, "group_id": None, "enable_auto_commit": False,
                           "auto_offset_reset": "none",
                           "max_poll_records": _POLL_RECORDS})
    try:
        consumer.assign([span.tp])
        consumer.seek(span.tp, span.start)
        expected = span.start
        idle_since = time.monotonic()
        while expected < span.end:
            try:
                records = consumer.poll(0.5)
            except NoOffsetForPartitionError as exc:
                message = (f"{span.topic}-{span.partition}: offsets {expected}..{span.end - 1}"
                           " are no longer in the log (deleted or truncated)")
                if fail_on_data_loss:
                    raise DataLossError(message + "; set failOnDataLoss=false to skip them"
                                        ) from exc
                log.warning("%s; skipping to the earliest offset (failOnDataLoss=false)",
                            message)
                consumer.seek_to_beginning([span.tp])
                continue
            if not records:
                position = consumer.position(span.tp)
                if position >= span.end:
                    break
                if time.monotonic() - idle_since > poll_timeout_ms / 1000:
                    raise RequestTimeoutError(
                        f"{span.topic}-{span.partition}: no record at offset {position} within"
                        f" kafkaConsumer.pollTimeoutMs={poll_timeout_ms}; check the broker")
                continue
            idle_since = time.monotonic()
            if records[-1].offset >= span.end:
                records = [r for r in records if r.offset < span.end]
            if records:
                expected = records[-1].offset + 1
                yield records
            else:
                break
    finally:
        consumer.close(1.0)
