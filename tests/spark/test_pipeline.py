"""SparkPipeline: DataFrames from Arrow in the Kafka source's schema, commits only after a batch
is processed, and nothing lost when the process is killed mid-batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit import Admin
from groupkit.errors import ConfigError
from groupkit.spark import SparkPipeline
from tests.spark.kafka_schema import SPARK_KAFKA_SCHEMA
from tests.spark.pipeline_worker import SETTINGS, ParquetSink

pytestmark = pytest.mark.xdist_group("spark")

ROOT = Path(__file__).resolve().parents[2]


def _committed(servers: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    with Admin(bootstrap_servers=servers) as admin:
        found = admin.list_group_offsets(group, [TopicPartition(topic, p)
                                                 for p in range(partitions)])
    return {tp.partition: c.offset for tp, c in found.items()}


def _run_in_thread(pipeline: SparkPipeline, timeout: float) -> None:
    failure: list[BaseException] = []

    def target() -> None:
        try:
            pipeline.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pipeline.stop()
        thread.join(30)
        pytest.fail(f"the pipeline did not reach the log end within {timeout} s")
    if failure:
        raise failure[0]


def test_batches_are_kafka_schema_dataframes_committed_after_processing(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str]) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=2, batches=1, per_batch=30)
    group = unique_name("p")
    seen: list[tuple[int, int, Any, dict[int, int]]] = []

    class Recorder(SparkPipeline):
        def process_dataframe(self, df: Any, batch_id: int) -> None:
            # What the group holds while the batch is processed: none of this batch yet.
            seen.append((batch_id, df.count(), df.schema, _committed(servers, group, topic, 2)))
            if sum(n for _, n, _, _ in seen) >= 60:
                self.stop()

    _run_in_thread(Recorder(spark=spark, topics=[topic], group_id=group, bootstrap_servers=servers,
                            **{**SETTINGS, "batch_max_records": 25}), 90)
    assert [b for b, _, _, _ in seen] == list(range(len(seen)))
    assert all(n <= 25 for _, n, _, _ in seen) and sum(n for _, n, _, _ in seen) == 60
    assert all(schema == SPARK_KAFKA_SCHEMA for _, _, schema, _ in seen)
    assert seen[0][3] == {}
    assert _committed(servers, group, topic, 2) == {0: 30, 1: 30}


def test_bad_pipeline_settings_raise_config_error() -> None:
    class P(SparkPipeline):
        pass

    with pytest.raises(ConfigError, match="batch_max_records must be a positive integer"):
        P(topics=["t"], group_id="g", bootstrap_servers="h:1", batch_max_records=0)
    with pytest.raises(ConfigError, match="on_error='stop'"):
        P(topics=["t"], group_id="g", bootstrap_servers="h:1", on_error="skip")


def test_killed_mid_batch_nothing_is_lost_and_commits_never_pass_the_sink(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str], tmp_path: Path) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=4, batches=3, per_batch=50)
    group = unique_name("kill")
    sink, marker = tmp_path / "sink", tmp_path / "stalled"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.spark.pipeline_worker", servers, topic, group, str(sink),
         str(marker), "2"], cwd=ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the worker never reached batch 2"
            time.sleep(0.2)
    finally:
        # SIGKILL the worker and its JVM (its own process group), in the middle of batch 2.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    written = spark.read.parquet(str(sink)).groupBy("partition").max("offset").collect()
    sink_ends = {r[0]: r[1] + 1 for r in written}
    committed = _committed(servers, group, topic, 4)
    assert committed, "batches 0 and 1 were processed and committed before the kill"
    assert all(o <= sink_ends.get(p, 0) for p, o in committed.items()), (committed, sink_ends)

    ends = dict.fromkeys(range(4), 150)
    # The restart reads what was not committed; a partition the first run finished (answers
    # are drained one after another, so batches 0 and 1 may cover whole partitions) has
    # nothing left to process, so the restart waits only for the others.
    left = {p: end for p, end in ends.items() if committed.get(p, 0) < end}
    assert left, "batch 2 was never committed, so some records are left"
    _run_in_thread(ParquetSink(str(sink), ends=left, spark=spark, topics=[topic], group_id=group,
                               bootstrap_servers=servers, **SETTINGS), 120)
    rows = {(r.partition, r.offset, bytes(r.value)) for r in spark.read.parquet(str(sink))
            .collect()}
    assert rows == {(p, o, f"{p}-{o}".encode()) for p in range(4) for o in range(150)}
    assert _committed(servers, group, topic, 4) == ends


def test_the_batch_in_flight_is_finished_when_partitions_are_revoked(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str]) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=2, batches=1, per_batch=15)
    group = unique_name("rv")
    frames: list[tuple[int, int]] = []

    class Revoked(SparkPipeline):
        def process_batch(self, records: list[Any]) -> None:
            super().process_batch(records)
            if len(self._pending) >= 30:
                # Neither limit is reached: stop() revokes with the batch still in flight.
                self.stop()

        def process_dataframe(self, df: Any, batch_id: int) -> None:
            frames.append((batch_id, df.count()))

    _run_in_thread(Revoked(spark=spark, topics=[topic], group_id=group, bootstrap_servers=servers,
                           **{**SETTINGS, "batch_max_records": 1000,
                              "batch_max_interval_ms": 600_000}), 90)
    assert frames == [(0, 30)]
    assert _committed(servers, group, topic, 2) == {0: 15, 1: 15}


def test_lost_partitions_records_are_abandoned_uncommitted() -> None:
    from groupkit.consumer import ConsumerRecord

    class P(SparkPipeline):
        def process_dataframe(self, df: Any, batch_id: int) -> None:
            raise AssertionError("nothing is processed here")

    pipeline = P(topics=["t"], group_id="g", bootstrap_servers="h:1")
    records = [ConsumerRecord(offset=o, timestamp=0, key=None, value=b"", topic="t",
                              partition=o % 2) for o in range(6)]
    pipeline.process_batch(records)
    pipeline.on_lost({TopicPartition("t", 1)})
    assert [(r.partition, r.offset) for r in pipeline._pending] == [(0, 0), (0, 2), (0, 4)]
    assert pipeline._next_offsets == {}


def test_a_failed_batch_stops_the_pipeline_and_nothing_from_it_on_is_committed(
        spark: Any, kafka_broker: Any, topic_with_batches: Callable[..., str],
        unique_name: Callable[[str], str]) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = topic_with_batches(partitions=1, batches=1, per_batch=30)
    group = unique_name("fail")

    class FailsSecond(SparkPipeline):
        failed = False

        def process_dataframe(self, df: Any, batch_id: int) -> None:
            # Fails once: a batch processed after the failure would succeed and be committed.
            if batch_id == 1 and not self.failed:
                self.failed = True
                raise RuntimeError("sink down")

    with pytest.raises(RuntimeError, match="sink down"):
        _run_in_thread(FailsSecond(spark=spark, topics=[topic], group_id=group,
                                   bootstrap_servers=servers,
                                   **{**SETTINGS, "batch_max_records": 10}), 90)
    assert _committed(servers, group, topic, 1) == {0: 10}
