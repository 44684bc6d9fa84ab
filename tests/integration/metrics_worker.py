"""A GroupConsumer in a process of its own with metrics on but no server, as a worker of a
pool runs: PROMETHEUS_MULTIPROC_DIR comes from the environment, and the values land in that
directory for another process to serve. It prints JSON lines (what it holds, how many records
it processed) and stops on SIGTERM.

Usage: python metrics_worker.py BOOTSTRAP GROUP TOPIC
"""

from __future__ import annotations

import json
import os
import sys
import threading

from assignors import TopicPartition
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from groupkit.metrics import PrometheusMetrics


class Worker(GroupConsumer):
    session_timeout_ms = 6000
    heartbeat_interval_ms = 500
    auto_offset_reset = "earliest"

    def __init__(self, **settings: object) -> None:
        super().__init__(**settings)
        self.lock = threading.Lock()
        self.held: set[int] = set()
        self.processed = 0

    def say(self) -> None:
        with self.lock:
            line = {"pid": os.getpid(), "held": sorted(self.held), "processed": self.processed}
        print(json.dumps(line), flush=True)

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        with self.lock:
            self.processed += len(records)
        self.say()

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.held |= {tp.partition for tp in partitions}
        self.say()

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        with self.lock:
            self.held -= {tp.partition for tp in partitions}
        self.say()

    on_lost = on_revoked


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    assert os.environ.get("PROMETHEUS_MULTIPROC_DIR"), "run me with PROMETHEUS_MULTIPROC_DIR"
    Worker(bootstrap_servers=bootstrap, group_id=group, topics=[topic],
           hooks=[PrometheusMetrics()]).run()


if __name__ == "__main__":
    main()
