"""Spark reading a topic through groupkit-kafka: Arrow record batches against Python rows.

Writes N records (100-byte values, 8-byte keys) to a 4-partition topic on a local broker, then
counts them with ``spark.read.format(...).load().count()`` on a local[2] SparkSession, twice
per variant, keeping the best: ``arrow`` is the source as shipped (executors yield pyarrow
RecordBatches), ``rows`` the same source yielding one Python tuple per record, as a Python data
source does without Arrow. Both read with the same Consumer path; only the hand-over differs.

    .venv/bin/python bench/spark_read.py [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groupkit import Admin, Producer  # noqa: E402
from groupkit.testing import LocalBroker  # noqa: E402

PARTITIONS = 4
VALUE = bytes(range(100))
_UTC = datetime.timezone.utc


def fill(servers: str, topic: str, n: int) -> None:
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([topic], num_partitions=PARTITIONS)
    with Producer(bootstrap_servers=servers, batch_size=1_000_000, linger_ms=20) as producer:
        for i in range(n):
            producer.send(topic, VALUE, key=b"%08d" % i, partition=i % PARTITIONS)
        producer.flush(300)


def row_source() -> type:
    """groupkit-kafka with read() yielding Python tuples instead of Arrow batches."""
    from pyspark.sql.datasource import InputPartition

    from groupkit.spark.records import read_range
    from groupkit.spark.source import GroupkitKafkaSource, _BatchReader

    class RowReader(_BatchReader):
        def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
            o = self.options
            span = partition.value
            for records in read_range(o.settings, span, o.fail_on_data_loss, o.poll_timeout_ms):
                for r in records:
                    yield (r.key, r.value, span.topic, span.partition, r.offset,
                           datetime.datetime.fromtimestamp(r.timestamp / 1000, _UTC),
                           r.timestamp_type)

    class RowSource(GroupkitKafkaSource):
        @classmethod
        def name(cls) -> str:
            return "groupkit-kafka-rows"

        def reader(self, schema: Any) -> Any:
            from groupkit.spark.options import SourceOptions

            return RowReader(SourceOptions.parse(self.options, streaming=False))

    return RowSource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import groupkit.spark

    with LocalBroker() as broker:
        servers = broker.bootstrap_servers
        started = time.perf_counter()
        fill(servers, "bench", args.records)
        print(f"wrote {args.records:,} records in {time.perf_counter() - started:.1f} s")
        spark = (SparkSession.builder.master("local[2]").appName("bench-spark-read")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        groupkit.spark.register(spark)
        spark.dataSource.register(row_source())
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for variant, fmt in (("arrow", "groupkit-kafka"), ("rows", "groupkit-kafka-rows")):
                df = (spark.read.format(fmt).option("kafka.bootstrap.servers", servers)
                      .option("subscribe", "bench").load())
                started = time.perf_counter()
                count = df.count()
                took = time.perf_counter() - started
                assert count == args.records, (variant, count)
                best[variant] = min(best.get(variant, took), took)
        spark.stop()
    print(f"{args.records:,} records, {PARTITIONS} partitions, DataFrame count(), local[2],"
          f" best of {args.repeat}")
    for variant, took in best.items():
        print(f"  {variant:6} {took:7.2f} s  {args.records / took:>12,.0f} records/s")
    print(f"  arrow/rows speed = {best['rows'] / best['arrow']:.2f}x")


if __name__ == "__main__":
    main()
