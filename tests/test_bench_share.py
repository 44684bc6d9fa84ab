"""bench/share.py's input: every run reads the same record sets."""

from __future__ import annotations

import json
import time
from typing import Any

from bench import share
from tests.support.mock_cluster import MockCluster

PARTITIONS = share.PARTITION_COUNTS[0]


class _Slow:
    """The producer of a slow machine: a 10 ms pause after every 100th record, twice
    librdkafka's default linger.ms (which would cut a record set there)."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.sent = 0

    def produce(self, *args: Any, **kwargs: Any) -> None:
        self.producer.produce(*args, **kwargs)
        self.sent += 1
        if self.sent % 100 == 0:
            time.sleep(0.01)

    def flush(self, timeout: float) -> int:
        return int(self.producer.flush(timeout))


def test_the_share_bench_produces_record_sets_of_one_size() -> None:
    """The records go out in record sets of exactly ``BATCH`` records, round-robin over the
    partitions, even on a slow machine: the mock's work and a member's per answer grow with
    the record sets the acquired records sit in, so the clients must get the same ones."""
    emitted: list[dict[str, Any]] = []
    with MockCluster() as mock:
        producer = mock.warm_producer(**share.PRODUCER, **{
            "statistics.interval.ms": 100,
            "stats_cb": lambda raw: emitted.append(json.loads(raw))})
        mock.create_topic("bench-input", PARTITIONS)
        records = 3 * share.BATCH * PARTITIONS
        share._produce(_Slow(producer), "bench-input", records, PARTITIONS)

        sizes: list[tuple[int, int, int]] = []  # (count, smallest, largest) per emission
        seen = 0
        deadline = time.monotonic() + 30
        while sum(n for n, _, _ in sizes) < records // share.BATCH:
            assert time.monotonic() < deadline, f"statistics named {sizes} record sets"
            producer.poll(0.1)
            for stats in emitted[seen:]:
                window = stats["topics"].get("bench-input", {}).get("batchcnt", {})
                if window.get("cnt"):
                    sizes.append((window["cnt"], window["min"], window["max"]))
            seen = len(emitted)
        partitions = {p: data["txmsgs"] for p, data in
                      emitted[-1]["topics"]["bench-input"]["partitions"].items() if p != "-1"}

    assert sum(n for n, _, _ in sizes) == records // share.BATCH
    assert {low for _, low, _ in sizes} == {share.BATCH}
    assert {high for _, _, high in sizes} == {share.BATCH}
    assert partitions == {str(p): records // PARTITIONS for p in range(PARTITIONS)}
