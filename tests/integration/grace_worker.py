"""A GroupConsumer run as its own process by test_stop_grace.py: ``python grace_worker.py
BOOTSTRAP TOPIC GROUP GRACE_MS``. Prints "assigned" once it holds partitions and "returned"
when run() returns."""

from __future__ import annotations

import logging
import sys
from typing import Any

from assignors import TopicPartition
from groupkit.group_consumer import GroupConsumer


class GraceWorker(GroupConsumer):
    session_timeout_ms = 6000
    heartbeat_interval_ms = 500
    auto_offset_reset = "earliest"
    auto_commit_interval_ms = 200

    def process(self, record: Any) -> None:
        pass

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        if partitions:
            print("assigned", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    bootstrap, topic, group, grace = sys.argv[1:5]
    GraceWorker(bootstrap_servers=bootstrap, topics=[topic], group_id=group,
                stop_grace_ms=int(grace)).run()
    print("returned", flush=True)
