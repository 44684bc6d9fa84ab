"""groupkit on Spark: the ``groupkit-kafka`` data source and ``SparkPipeline``.

Needs the ``spark`` extra (``pip install groupkit[spark]``: pyspark 4.2+, pyarrow). Nothing in
``import groupkit`` loads this package; import it where Spark is used.

- ``register(spark)`` makes ``spark.read(Stream).format("groupkit-kafka")`` available, with the
  options of Spark's Kafka source, and adds the listener that commits every completed
  micro-batch of a stream to its ``kafka.group.id``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupkit.spark.commits import GroupCommitListener

from groupkit.spark.commits import await_commits
from groupkit.spark.pipeline import SparkPipeline

__all__ = ["SparkPipeline", "await_commits", "register"]


def register(spark: SparkSession, commit_settings: Mapping[str, Any] | None = None
             ) -> GroupCommitListener:
    """Register the ``groupkit-kafka`` source and the group commit listener on ``spark``.

    ``commit_settings`` are client settings for the commit connections when the brokers need
    TLS or SASL (groupkit names, e.g. ``{"security_protocol": "SASL_SSL", ...}``). Calling it
    again is harmless. Returns the listener.
    """
    from groupkit.spark.commits import listener_for
    from groupkit.spark.source import GroupkitKafkaSource

    spark.dataSource.register(GroupkitKafkaSource)
    return listener_for(spark, commit_settings)
