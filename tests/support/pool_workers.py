"""Worker classes for the pool tests, imported by worker processes as ``MODULE:CLASS``.

Each worker appends JSON lines to ``$POOL_TEST_DIR/<pid>.jsonl``: what it holds after every
assignment change (with the generation it got it in) and every record it processed, so a test
can check what the workers did after they are gone.
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
from groupkit.hooks import Synced


class RecordingWorker(GroupConsumer):
    """Logs what it holds and processes; session settings short enough for tests."""

    session_timeout_ms = 6000
    heartbeat_interval_ms = 500
    auto_offset_reset = "earliest"
    auto_commit_interval_ms = 200

    def __init__(self, hooks: Any = (), **settings: Any) -> None:
        super().__init__(hooks=[*hooks, self._event], **settings)
        self._file = (Path(os.environ["POOL_TEST_DIR"]) / f"{os.getpid()}.jsonl").open("a")
        self._generation = -1
        self._held: set[int] = set()

    def _write(self, **line: Any) -> None:
        self._file.write(json.dumps({"pid": os.getpid(), **line}) + "\n")
        self._file.flush()

    def _event(self, event: object) -> None:
        if isinstance(event, Synced):
            self._generation = event.generation_id

    def _holding(self) -> None:
        self._write(kind="held", gen=self._generation, held=sorted(self._held))

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self._held |= {tp.partition for tp in partitions}
        self._holding()

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self._held -= {tp.partition for tp in partitions}
        self._holding()

    on_lost = on_revoked

    def process(self, record: ConsumerRecord) -> None:
        self._write(kind="record", p=record.partition, o=record.offset)


class HangOnceWorker(RecordingWorker):
    """The first record any worker of the pool sees sends it into a long pure-Python sum that
    holds the GIL (a marker file makes it happen once); the replacement works normally."""

    def process(self, record: ConsumerRecord) -> None:
        marker = Path(os.environ["POOL_TEST_DIR"]) / "hung"
        if not marker.exists():
            marker.touch()
            sum(range(10**10))
        super().process(record)


class FailsAtStart(RecordingWorker):
    """Cannot be built: the pool must stop with the error."""

    def __init__(self, **settings: Any) -> None:
        raise RuntimeError("FailsAtStart: the database this worker needs is unreachable")


class SlowWorker(RecordingWorker):
    """Takes 60 s per record, so a graceful stop has to wait for it."""

    def process(self, record: ConsumerRecord) -> None:
        self._write(kind="started", p=record.partition, o=record.offset)
        time.sleep(60)
        super().process(record)


class CrashesOnRecords(RecordingWorker):
    """Raises on every record: each worker crashes as soon as it gets one."""

    def process(self, record: ConsumerRecord) -> None:
        raise RuntimeError(f"CrashesOnRecords cannot handle offset {record.offset}")
