"""A task queue on a share group (KIP-932): ``groupkit run tasks:TaskWorker --processes 8``.

Each record of the "tasks" topic is one job, as JSON: ``{"id": 17, "text": "...", "rounds":
20000}``. A worker derives a key from the text (PBKDF2-SHA256, CPU-bound: the rounds set what a
job costs, from a millisecond to a second), so jobs take different times, as real tasks do.
In a share group a long job holds up only itself: the other records of its partition go to
other workers meanwhile, and there may be more workers than partitions.

    python tasks.py enqueue localhost:9092 1000   # create "tasks" if missing, add 1000 jobs

What ``process`` does with a record is its acknowledgement: it returns (ACCEPT, done), it
raises ``RejectRecord`` for a job that can never succeed (REJECT: malformed JSON, bad fields;
never delivered again), or anything else raises (RELEASE: the job is delivered again, to any
worker, with ``delivery_count`` one higher, until the broker's group.share.delivery.count.limit,
5 by default, archives it).

Run from this directory (MODULE is imported from the current directory). Each worker process
builds its own TaskWorker, so what ``__init__`` makes belongs to one process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

from groupkit import Admin, Producer, RejectRecord, ShareConsumerRecord, ShareWorker

log = logging.getLogger(__name__)

TOPIC = "tasks"
MAX_ROUNDS = 5_000_000


class TaskWorker(ShareWorker):
    topics = [TOPIC]
    group_id = "task-workers"
    # A poll's records are acknowledged together after the last of them was processed, so
    # a poll's worth of jobs must finish within the broker's acquisition lock
    # (group.share.record.lock.duration.ms, 30 s by default): keep polls small.
    max_poll_records = 10

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.done = 0

    def process(self, record: ShareConsumerRecord) -> None:
        job = parse(record.value)
        if record.delivery_count > 1:
            log.info("job %s: delivery %d", job["id"], record.delivery_count)
        started = time.perf_counter()
        key = self.run_job(job)
        self.done += 1
        log.info("job %s done in %.0f ms: %s", job["id"],
                 (time.perf_counter() - started) * 1000, key[:12])

    def run_job(self, job: dict[str, Any]) -> str:
        """The work itself; an exception here releases the job for another try."""
        return hashlib.pbkdf2_hmac("sha256", job["text"].encode(), b"groupkit",
                                   job["rounds"]).hex()


def parse(value: bytes | None) -> dict[str, Any]:
    """The job a record holds; RejectRecord when it cannot hold one (no retry can help)."""
    try:
        job = json.loads(value or b"")
    except ValueError as exc:
        raise RejectRecord(f"not JSON: {exc}") from None
    if not (isinstance(job, dict) and isinstance(job.get("id"), int)
            and isinstance(job.get("text"), str) and isinstance(job.get("rounds"), int)
            and 1 <= job["rounds"] <= MAX_ROUNDS):
        raise RejectRecord(f"not a job: {value!r:.80}")
    return job


def jobs(count: int, first_id: int = 0) -> Iterator[bytes]:
    """``count`` jobs, mostly quick, every 50th a slow one (a million rounds)."""
    for i in range(first_id, first_id + count):
        rounds = 1_000_000 if i % 50 == 49 else 1_000 * (1 + i % 20)
        yield json.dumps({"id": i, "text": f"task {i}", "rounds": rounds}).encode()


def enqueue(bootstrap: str, count: int, topic: str = TOPIC, partitions: int = 4) -> None:
    """Create ``topic`` if it is missing, then add ``count`` jobs to it."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        if topic not in admin.list_topics():
            admin.create_topics([topic], num_partitions=partitions)
    with Producer(bootstrap_servers=bootstrap) as producer:
        sent = [producer.send(topic, value) for value in jobs(count)]
        for future in sent:
            future.result()  # raises if a job could not be written


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "enqueue":
        sys.exit("usage: python tasks.py enqueue BOOTSTRAP COUNT")
    enqueue(sys.argv[2], int(sys.argv[3]))
