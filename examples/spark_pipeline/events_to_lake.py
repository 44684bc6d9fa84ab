"""Events from Kafka to Parquet with Spark, and the totals per user: both groupkit ways.

One command, against a local broker it starts itself (or yours with --bootstrap-servers):

    .venv/bin/python examples/spark_pipeline/events_to_lake.py [--way stream|pipeline] [--out DIR]

``stream``: Spark owns progress (its checkpoint); the groupkit-kafka source reads the topic
in micro-batches (availableNow: everything there now, then stop) and commits each completed
batch to the group, so lag tools see the job. ``pipeline``: the group owns progress; a
SparkPipeline member turns polled records into DataFrames and commits after each is written.
Either way the events land in OUT/events (Parquet) and OUT/totals holds the sum per user.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, functions as F

import groupkit.spark
from groupkit import Admin, Producer
from groupkit.spark import SparkPipeline, await_commits
from groupkit.testing import LocalBroker

TOPIC, GROUP, USERS, EVENTS = "events", "events-to-lake", 5, 2000
EVENT_SCHEMA = "user string, amount long"


def produce(servers: str) -> None:
    with Admin(bootstrap_servers=servers) as admin:
        if TOPIC not in admin.list_topics():
            admin.create_topics([TOPIC], num_partitions=4)
    with Producer(bootstrap_servers=servers) as producer:
        for i in range(EVENTS):
            user = f"user-{i % USERS}"
            producer.send(TOPIC, json.dumps({"user": user, "amount": i % 7}).encode(),
                          key=user.encode())
        producer.flush(60)


def parsed(df: DataFrame) -> DataFrame:
    """Kafka rows -> (user, amount, partition, offset, timestamp)."""
    event = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA)
    return df.select(event["user"].alias("user"), event["amount"].alias("amount"),
                     "partition", "offset", "timestamp")


def by_stream(spark: SparkSession, servers: str, out: Path) -> None:
    source = (spark.readStream.format("groupkit-kafka")
              .option("kafka.bootstrap.servers", servers).option("subscribe", TOPIC)
              .option("startingOffsets", "group").option("startingOffsetsFallback", "earliest")
              .option("kafka.group.id", GROUP).option("maxOffsetsPerTrigger", "500").load())
    query = (parsed(source).writeStream.format("parquet").option("path", str(out / "events"))
             .option("checkpointLocation", str(out / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    # The source committed the last batch before the query ended; this waits for the
    # listener's commit of it too, so nothing is left in flight when the driver moves on.
    await_commits(query)


class EventsToLake(SparkPipeline):
    """Appends each batch's parsed events to OUT/events; stops when the topic is drained."""

    topics = [TOPIC]
    group_id = GROUP
    auto_offset_reset = "earliest"
    batch_max_records = 500

    def __init__(self, out: Path, expected: int, **settings: Any) -> None:
        super().__init__(**settings)
        self.out, self.expected, self.written = out, expected, 0

    def process_dataframe(self, df: DataFrame, batch_id: int) -> None:
        parsed(df).write.mode("append").parquet(str(self.out / "events"))
        self.written += df.count()
        if self.written >= self.expected:
            self.stop()


def by_pipeline(spark: SparkSession, servers: str, out: Path) -> None:
    with Admin(bootstrap_servers=servers) as admin:
        from assignors import TopicPartition

        parts = [TopicPartition(TOPIC, p) for p in range(admin.list_topics()[TOPIC])]
        ends = admin.log_end_offsets(parts)
        done = admin.list_group_offsets(GROUP, parts)
    expected = sum(ends[tp] - (done[tp].offset if tp in done else 0) for tp in parts)
    pipeline = EventsToLake(out, expected, spark=spark, bootstrap_servers=servers,
                            session_timeout_ms=6000, heartbeat_interval_ms=1000)
    pipeline.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--way", choices=("stream", "pipeline"), default="stream")
    parser.add_argument("--bootstrap-servers", help="default: start a local broker")
    parser.add_argument("--out", type=Path, help="default: a new temporary directory")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with ExitStack() as stack:
        servers = args.bootstrap_servers or stack.enter_context(LocalBroker()).bootstrap_servers
        out = args.out or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        produce(servers)
        spark = (SparkSession.builder.master("local[2]").appName("events-to-lake")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        groupkit.spark.register(spark)
        (by_stream if args.way == "stream" else by_pipeline)(spark, servers, out)
        events = spark.read.parquet(str(out / "events"))
        totals = events.groupBy("user").agg(F.sum("amount").alias("total"),
                                            F.count("*").alias("events")).orderBy("user")
        totals.write.mode("overwrite").parquet(str(out / "totals"))
        totals.show()
        with Admin(bootstrap_servers=servers) as admin:
            committed = admin.list_group_offsets(GROUP)
        print(f"group {GROUP} committed:",
              {f"{tp.topic}-{tp.partition}": c.offset for tp, c in sorted(committed.items())})
        print(f"Parquet: {out / 'events'} and {out / 'totals'}")
        spark.stop()


if __name__ == "__main__":
    main()
