"""A GroupConsumer for a worker pool: ``groupkit run orders:OrderWorker --processes 4``.

Run from this directory (MODULE is imported from the current directory). Each of the pool's
processes builds its own OrderWorker, so anything made in ``__init__`` (a database connection,
a client) belongs to one worker process and is never shared across a fork.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from groupkit import ConsumerRecord, GroupConsumer

log = logging.getLogger(__name__)


class OrderWorker(GroupConsumer):
    topics = ["orders"]
    group_id = "order-workers"
    # Static membership: pool slot i joins as "order-workers-host1-<i>", so a worker replaced
    # within the session timeout gets its partitions back without a rebalance of the others.
    group_instance_id = "order-workers-host1"
    session_timeout_ms = 30000
    # The supervisor kills a worker that has not polled for this long plus liveness_grace_s.
    max_poll_interval_ms = 60000
    auto_offset_reset = "earliest"

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.seen = 0

    def process(self, record: ConsumerRecord) -> None:
        # CPU-bound work scales with processes, not threads: each worker has its own GIL.
        digest = hashlib.sha256(record.value or b"").hexdigest()
        self.seen += 1
        if self.seen % 1000 == 0:
            log.info("%d orders processed, last digest %s", self.seen, digest[:12])
