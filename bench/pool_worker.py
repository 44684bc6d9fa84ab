"""The worker the pool benchmark runs: ``process`` spins pure Python for a fixed number of
loop steps (calibrated by ``bench.pool`` to about 200 us) and reports progress to a file.

Settings come from the environment (``BENCH_POOL_DIR``, ``BENCH_POOL_SPIN``) so the benchmark
can run it with ``groupkit run bench.pool_worker:Spinner`` like any user.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from assignors import TopicPartition
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer

# Progress lines every this many records (and when the assignment changes).
REPORT_EVERY = 250


def spin(steps: int) -> int:
    """Pure-Python work that holds the GIL: ``steps`` additions."""
    total = 0
    for i in range(steps):
        total += i
    return total


class Spinner(GroupConsumer):
    session_timeout_ms = 6000
    heartbeat_interval_ms = 500
    auto_offset_reset = "earliest"

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.steps = int(os.environ["BENCH_POOL_SPIN"])
        self.path = Path(os.environ["BENCH_POOL_DIR"]) / f"{os.getpid()}.jsonl"
        self.count = 0
        self.held: set[int] = set()

    def _report(self) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"count": self.count, "t": time.time(),
                                "held": sorted(self.held)}) + "\n")

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self.held |= {tp.partition for tp in partitions}
        self._report()

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self.held -= {tp.partition for tp in partitions}
        self._report()

    on_lost = on_revoked

    def process(self, record: ConsumerRecord) -> None:
        spin(self.steps)
        self.count += 1
        if self.count % REPORT_EVERY == 0:
            self._report()
