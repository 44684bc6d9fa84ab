"""A SparkPipeline that appends each batch to a Parquet sink; run as a script it can stall in
the middle of a batch (after writing it, before returning) so a test can SIGKILL it there.

    python -m tests.spark.pipeline_worker SERVERS TOPIC GROUP SINK MARKER STALL_AT
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from groupkit.spark import SparkPipeline

SETTINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
            "auto_offset_reset": "earliest", "batch_max_records": 100,
            "batch_max_interval_ms": 500}


class ParquetSink(SparkPipeline):
    """Appends (partition, offset, value) of every batch to ``sink``; stops once every
    partition in ``ends`` was processed up to its end; stalls forever in batch ``stall_at``."""

    def __init__(self, sink: str, ends: dict[int, int] | None = None,
                 stall_at: int | None = None, marker: str | None = None,
                 **settings: Any) -> None:
        super().__init__(**settings)
        self.sink = sink
        self.ends = ends or {}
        self.stall_at = stall_at
        self.marker = marker
        self.reached: dict[int, int] = {}

    def process_dataframe(self, df: Any, batch_id: int) -> None:
        df.select("partition", "offset", "value").write.mode("append").parquet(self.sink)
        if batch_id == self.stall_at:
            assert self.marker is not None
            Path(self.marker).write_text(str(os.getpid()))
            time.sleep(3600)
        for row in df.groupBy("partition").max("offset").collect():
            self.reached[row[0]] = max(self.reached.get(row[0], -1), row[1] + 1)
        if self.ends and all(self.reached.get(p, 0) >= e for p, e in self.ends.items()):
            self.stop()


def main(argv: list[str]) -> None:
    servers, topic, group, sink, marker, stall_at = argv
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("pipeline-worker")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ParquetSink(sink, stall_at=int(stall_at), marker=marker, spark=spark, topics=[topic],
                group_id=group, bootstrap_servers=servers, **SETTINGS).run()


if __name__ == "__main__":
    main(sys.argv[1:])
