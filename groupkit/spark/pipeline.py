"""``SparkPipeline``: a GroupConsumer that processes Spark DataFrames and lets the group own
progress.

Polled records gather into a batch until it holds ``batch_max_records`` or its first record
waited ``batch_max_interval_ms``. The batch becomes one Arrow table and one DataFrame
(``spark.createDataFrame`` from Arrow, not from Python rows) with the schema of Spark's Kafka
source; ``process_dataframe(df, batch_id)`` gets it, and only after that returns are the batch's
offsets committed. On revocation the batch in flight is finished first (so what is committed for
the revoked partitions was processed); lost partitions' records are abandoned uncommitted. A
process killed mid-batch commits nothing of it: a restart reads those records again
(at-least-once; the sink may see a batch twice).
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from assignors import TopicPartition
from groupkit.consumer import Consumer, ConsumerRecord
from groupkit.errors import ConfigError
from groupkit.group_consumer import GroupConsumer
from groupkit.spark.records import to_arrow

__all__ = ["SparkPipeline"]

log = logging.getLogger(__name__)

_OWN = ("batch_max_records", "batch_max_interval_ms", "include_headers")


class SparkPipeline(GroupConsumer):
    """Subclass it, set ``topics`` and ``group_id``, write ``process_dataframe``, ``run()``.

    ``spark`` is the SparkSession to use (default: the active one, else a new local one).
    ``on_error`` must stay "stop": a batch that fails is not committed and ``run()`` raises.
    ``records_processed`` in the summary counts records handed to batches.
    """

    batch_max_records: ClassVar[int] = 10000
    batch_max_interval_ms: ClassVar[int] = 1000
    include_headers: ClassVar[bool] = False

    def __init__(self, spark: SparkSession | None = None, **settings: Any) -> None:
        own = {name: settings.pop(name, getattr(type(self), name)) for name in _OWN}
        super().__init__(**settings)
        for name in ("batch_max_records", "batch_max_interval_ms"):
            value = own[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, not {value!r}")
        if not isinstance(own["include_headers"], bool):
            raise ConfigError(f"include_headers must be True or False, not"
                              f" {own['include_headers']!r}")
        if self._on_error != "stop":
            raise ConfigError("a SparkPipeline stops on a failed batch (on_error='stop'): a"
                              " skipped DataFrame would be committed unprocessed")
        self._max_records: int = own["batch_max_records"]
        self._max_wait = own["batch_max_interval_ms"] / 1000
        self._headers: bool = own["include_headers"]
        self._spark = spark
        self._pending: list[ConsumerRecord] = []
        self._pending_since = 0.0
        self._batch_id = 0
        self._consumer: Consumer | None = None

    def process_dataframe(self, df: DataFrame, batch_id: int) -> None:
        """Handle one batch; its offsets are committed after this returns."""
        raise NotImplementedError

    @property
    def spark(self) -> SparkSession:
        """The session DataFrames are made in."""
        if self._spark is None:
            self._spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        return self._spark

    # --- GroupConsumer's steps, batched ----------------------------------------------------

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        """Gather ``records``; a full batch goes to ``process_dataframe`` at once."""
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.extend(records)
        while len(self._pending) >= self._max_records:
            self._finish(self._max_records)

    def _advance(self, records: list[ConsumerRecord]) -> None:
        """Offsets advance when their batch is processed (``_finish``), not when polled."""

    def _loop(self, consumer: Consumer) -> None:
        # Kept until run() ends: close() revokes, and on_revoked's batch commits through it.
        self._consumer = consumer
        super()._loop(consumer)

    def _commit_if_due(self, consumer: Consumer) -> None:
        if self._pending and time.monotonic() - self._pending_since >= self._max_wait:
            self._finish(len(self._pending))
        super()._commit_if_due(consumer)

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        """Finish the batch in flight, so the commit that follows covers processed records."""
        if self._pending:
            self._finish(len(self._pending))

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        """Abandon the lost partitions' records: another member reads them again."""
        kept = [r for r in self._pending
                if TopicPartition(r.topic, r.partition) not in partitions]
        if len(kept) != len(self._pending):
            log.info("%s abandons %d uncommitted record(s) of lost partitions",
                     type(self).__name__, len(self._pending) - len(kept))
        self._pending = kept

    def _finish(self, count: int) -> None:
        """Turn the first ``count`` pending records into a DataFrame, process it, commit."""
        batch, self._pending = self._pending[:count], self._pending[count:]
        self._pending_since = time.monotonic()
        table = pa.Table.from_batches([to_arrow(batch, self._headers)])
        df = self.spark.createDataFrame(table)
        try:
            self.process_dataframe(df, self._batch_id)
        except BaseException:
            # run() stops with this error; the records after the failed batch must not be
            # processed and committed on the way out (the revoke in close()), or the failed
            # ones would be skipped for good.
            self._pending = []
            raise
        self._batch_id += 1
        GroupConsumer._advance(self, batch)
        if self._consumer is not None:
            self._commit(self._consumer, self._next_offsets)
