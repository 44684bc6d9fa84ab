"""Worker classes for the pool tests, imported by worker processes as ``MODULE:CLASS``.

Each worker appends JSON lines (tests/support/worker_log.py) to ``$POOL_TEST_DIR/<pid>.jsonl``:
what it holds after every assignment change (with the generation it holds it in) and every
record it processed, so a test can check what the workers did after they are gone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from groupkit.consumer import ConsumerRecord
from tests.support.worker_log import LoggedWorker


class RecordingWorker(LoggedWorker):
    """Logs to ``$POOL_TEST_DIR/<pid>.jsonl``; session settings short enough for tests."""

    session_timeout_ms = 6000
    heartbeat_interval_ms = 500
    auto_offset_reset = "earliest"
    auto_commit_interval_ms = 200

    def __init__(self, hooks: Any = (), **settings: Any) -> None:
        log = (Path(os.environ["POOL_TEST_DIR"]) / f"{os.getpid()}.jsonl").open("a")
        super().__init__(log, hooks=hooks, **settings)


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
        self.note("started", p=record.partition, o=record.offset)
        time.sleep(60)
        super().process(record)


class CrashesOnRecords(RecordingWorker):
    """Raises on every record: each worker crashes as soon as it gets one."""

    def process(self, record: ConsumerRecord) -> None:
        raise RuntimeError(f"CrashesOnRecords cannot handle offset {record.offset}")
