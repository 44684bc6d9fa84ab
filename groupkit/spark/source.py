"""The ``groupkit-kafka`` data source: Spark 4's Python data source API over groupkit's client.

Planning (which offsets a batch covers) runs in the driver's Python worker through an Admin;
reading runs in executor Python workers, one task per partition range, with a Consumer that
only assigns. Offsets go through Spark's checkpoint as the JSON of Spark's Kafka source (see
``groupkit.spark.offsets``).

Committing to ``kafka.group.id``: Spark calls a source's ``commit()`` one batch late and never
for the last batch of an availableNow run, so it is not used. Spark asks ``latestOffset(start)``
for the next batch only after the previous one completed, and once more after the last batch of
an availableNow run, so ``start`` is a completed batch's end: it is committed there, before the
query goes on or ends. A query stopped between triggers is covered by the listener in
``groupkit.spark.commits``, which commits each batch's end from its progress event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from groupkit.errors import ConfigError
from groupkit.spark.offsets import DataLossError, Positions, SourceCluster, decode, encode
from groupkit.spark.options import SourceOptions
from groupkit.spark.records import OffsetRange, read_range, spark_schema_ddl, to_arrow

__all__ = ["GroupkitKafkaSource"]

log = logging.getLogger(__name__)


class GroupkitKafkaSource(DataSource):
    """``spark.read(Stream).format("groupkit-kafka")``; options as Spark's Kafka source's."""

    @classmethod
    def name(cls) -> str:
        return "groupkit-kafka"

    def schema(self) -> str:
        # Called at load(): every option is checked here, before any query starts.
        return spark_schema_ddl(SourceOptions.parse(self.options, streaming=None)
                                .include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _StreamReader(SourceOptions.parse(self.options, streaming=True))


def _read(options: SourceOptions, partition: InputPartition | None
          ) -> Iterator[pa.RecordBatch]:
    """An executor's task: the partition's range as Arrow record batches."""
    span = getattr(partition, "value", None)
    if not isinstance(span, OffsetRange):
        # No range has records: Spark still runs one task, and hands it no range.
        return
    for records in read_range(options.settings, span, options.fail_on_data_loss,
                              options.poll_timeout_ms):
        yield to_arrow(records, options.include_headers, span.tp)


def _lost(options: SourceOptions, message: str) -> None:
    """Data loss: raise, or with failOnDataLoss=false warn and go on (as Spark's source)."""
    if options.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to go on without it")
    log.warning("%s; going on (failOnDataLoss=false)", message)


def _ranges(options: SourceOptions, cluster: SourceCluster, start: Positions,
            end: Positions) -> list[InputPartition]:
    """One input partition per partition with records in [start, end); a partition missing
    from ``start`` is new and starts at its earliest offset. Starts the log no longer holds are
    data loss."""
    earliest = cluster.earliest(end)
    out: list[InputPartition] = []
    for tp in sorted(end):
        begin = start.get(tp, earliest[tp])
        if begin < earliest[tp]:
            _lost(options, f"{tp.topic}-{tp.partition}: offsets {begin}..{earliest[tp] - 1}"
                           " were deleted before they were read")
            begin = earliest[tp]
        if begin < end[tp]:
            out.append(InputPartition(OffsetRange(tp.topic, tp.partition, begin, end[tp])))
    return out


class _BatchReader(DataSourceReader):
    """``spark.read``: the ranges from startingOffsets to endingOffsets, fixed at planning."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        cluster = SourceCluster(self.options)
        try:
            parts = cluster.partitions()
            start = cluster.resolve(self.options.starting, parts)
            end = cluster.resolve(self.options.ending, parts)
            for tp in sorted(parts):
                if start[tp] > end[tp]:
                    raise ConfigError(
                        f"{tp.topic}-{tp.partition}: startingOffsets {start[tp]} is past"
                        f" endingOffsets {end[tp]}")
            return _ranges(self.options, cluster, start, end)
        finally:
            cluster.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: each micro-batch reads from the last end to the log ends now
    (capped by maxOffsetsPerTrigger, or by the ends when an availableNow run began)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._cluster: SourceCluster | None = None
        self._cap: Positions | None = None
        self._initial: Positions | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the options only; the driver's connections stay on the driver.
        return {"options": self.options, "_cluster": None, "_cap": None, "_initial": None}

    @property
    def cluster(self) -> SourceCluster:
        if self._cluster is None:
            self._cluster = SourceCluster(self.options)
        return self._cluster

    def _encode(self, positions: Positions) -> dict[str, Any]:
        return encode(positions, self.cluster.commit_target)

    def initialOffset(self) -> dict[str, Any]:
        parts = self.cluster.partitions()
        self._initial = self.cluster.resolve(self.options.starting, parts)
        return self._encode(self._initial)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._cap = self.cluster.latest(self.cluster.partitions())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = decode(start)
        if begin != self._initial:
            # Spark asks for the next batch's end only once the previous batch completed (its
            # sink and commit log written), so ``start`` is a completed batch's end. This call
            # also comes after the last batch of an availableNow run, before the query ends.
            self.cluster.commit_completed(begin)
        parts = self.cluster.partitions()
        gone = sorted(set(begin) - parts)
        if gone:
            _lost(self.options, "partitions " + ", ".join(f"{t}-{p}" for t, p in gone)
                  + " disappeared (topic deleted?)")
        new = parts - set(begin)
        if new:
            log.info("new partitions %s are read from their earliest offset",
                     ", ".join(f"{t}-{p}" for t, p in sorted(new)))
        begin = {**self.cluster.earliest(new), **{tp: begin[tp] for tp in parts & set(begin)}}
        ends = self.cluster.latest(parts)
        if self._cap is not None:
            # availableNow: nothing past what existed when the run began (new partitions wait).
            ends = {tp: min(o, self._cap.get(tp, begin[tp])) for tp, o in ends.items()}
        for tp in sorted(parts):
            if ends[tp] < begin[tp]:
                _lost(self.options, f"{tp.topic}-{tp.partition}: the log end {ends[tp]} is"
                                    f" behind the offset read so far, {begin[tp]} (topic"
                                    " recreated or truncated?)")
                ends[tp] = begin[tp]
        if isinstance(limit, ReadMaxRows):
            ends = _limit(begin, ends, limit.max_rows)
        return self._encode(ends)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return _ranges(self.options, self.cluster, decode(start), decode(end))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark calls this one batch late (the group commit is elsewhere)."""

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _limit(begin: Positions, ends: Positions, max_rows: int) -> Positions:
    """Ends that add at most ``max_rows`` records, shared by partition in proportion to lag
    (as Spark's Kafka source shares maxOffsetsPerTrigger); the remainder goes to the largest
    fractions, so every trigger makes progress."""
    lags = {tp: ends[tp] - begin[tp] for tp in ends if ends[tp] > begin[tp]}
    total = sum(lags.values())
    if total <= max_rows:
        return ends
    shares = {tp: lag * max_rows / total for tp, lag in lags.items()}
    taken = {tp: int(s) for tp, s in shares.items()}
    left = max_rows - sum(taken.values())
    for tp in sorted(lags, key=lambda t: (taken[t] - shares[t], t))[:left]:
        taken[tp] += 1
    out = dict(ends)
    for tp in lags:
        out[tp] = begin[tp] + min(lags[tp], taken[tp])
    return out

