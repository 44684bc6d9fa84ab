"""Worker classes for the pool tests, imported by worker processes as ``MODULE:CLASS``.

Each worker appends JSON lines (tests/support/worker_log.py) to ``$POOL_TEST_DIR/<pid>.jsonl``:
what it holds after every assignment change (with the generation it holds it in) and every
record it processed, so a test can check what the workers did after they are gone.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from groupkit.consumer import ConsumerRecord
from groupkit.errors import UnreleasedInstanceIdError
from groupkit.hooks import Joined, Polled, RebalanceFinished
from groupkit.share_consumer import ShareConsumerRecord
from groupkit.share_worker import ShareWorker
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


class StallsAfter500(RecordingWorker):
    """Takes records 50 a poll, as fast as it can, and after the 500th processed stops polling:
    it logs ``stalled`` with how many records its polls handed over (its own count of its
    Polled events) and each partition's position, then waits in process() until stopped."""

    max_poll_records = 50
    STALL_AT = 500

    def __init__(self, hooks: Any = (), **settings: Any) -> None:
        super().__init__(hooks=[*hooks, self._count], **settings)
        self.handed = 0
        self.done = 0
        self.release = threading.Event()

    def _count(self, event: object) -> None:
        if isinstance(event, Polled):
            self.handed += event.records

    def process(self, record: ConsumerRecord) -> None:
        super().process(record)
        self.done += 1
        if self.done != self.STALL_AT:
            return
        consumer = self._consumer
        assert consumer is not None
        self.note("stalled", handed=self.handed, positions={
            str(tp.partition): consumer.position(tp) for tp in consumer.assignment()})
        deadline = time.monotonic() + 120
        while not self.release.wait(0.2) and time.monotonic() < deadline:
            pass

    def stop(self) -> None:
        self.release.set()
        super().stop()


class ExactlyOnceWorker(RecordingWorker):
    """processing_guarantee="exactly_once_v2": writes "partition:offset" of each record to
    "<topic>-out" (same partition), 20 ms per record so a poll's transaction is open most of
    the time; the pool gives it the slot's stable transactional id."""

    processing_guarantee = "exactly_once_v2"
    max_poll_records = 50

    def process(self, record: ConsumerRecord) -> None:
        time.sleep(0.02)
        super().process(record)
        self.send(f"{record.topic}-out", b"%d:%d" % (record.partition, record.offset),
                  partition=record.partition)


class ConsumerProtocolWorker(LoggedWorker):
    """RecordingWorker's logging for a pool run with ``group_protocol="consumer"`` (KIP-848):
    no session settings (the broker owns them there); every line carries ``t``
    (``time.monotonic()``, one clock for every process of the machine), so a test can order
    one worker's revocation before another's assignment; ``member`` lines give the member id and
    epoch each time the epoch changes (the Joined event), ``rebalanced`` lines each
    reconciliation finished (RebalanceFinished), to set against the pool's metrics."""

    auto_offset_reset = "earliest"
    auto_commit_interval_ms = 200

    def __init__(self, hooks: Any = (), **settings: Any) -> None:
        log = (Path(os.environ["POOL_TEST_DIR"]) / f"{os.getpid()}.jsonl").open("a")
        super().__init__(log, hooks=[*hooks, self._membership], **settings)

    def note(self, kind: str, **fields: Any) -> None:
        super().note(kind, t=time.monotonic(), **fields)

    def _membership(self, event: object) -> None:
        if isinstance(event, Joined):
            self.note("member", member_id=event.member_id, epoch=event.generation_id)
        elif isinstance(event, RebalanceFinished):
            self.note("rebalanced", epoch=event.generation_id)


class UnreleasedTwice(ConsumerProtocolWorker):
    """The first two workers the pool starts are refused their group instance id, as Kafka
    refuses a static member (UNRELEASED_INSTANCE_ID) while the member that held the id before is
    still in the group (a marker file counts them); later ones run normally. Injected: no test
    broker answers that (the mock cluster says UNKNOWN_MEMBER_ID, Tansu has no API 68)."""

    def run(self) -> Any:
        marker = Path(os.environ["POOL_TEST_DIR"]) / "unreleased"
        refused = int(marker.read_text()) if marker.exists() else 0
        if refused < 2:
            marker.write_text(str(refused + 1))
            raise UnreleasedInstanceIdError(
                f"Static member with instance id {self.config.group_instance_id} cannot join the group"
                " because the instance id is owned by another member.")
        return super().run()


# --- share groups (issue 30) -------------------------------------------------------------------


class ShareRecordingWorker(ShareWorker):
    """A share-group worker that logs every record it processed (``kind: record`` with its
    delivery count ``c``) to ``$POOL_TEST_DIR/<pid>.jsonl``, taking ``delay_ms`` per record."""

    fetch_max_wait_ms = 100
    max_poll_records = 10
    delay_ms = 5

    def __init__(self, hooks: Any = (), **settings: Any) -> None:
        self._log = (Path(os.environ["POOL_TEST_DIR"]) / f"{os.getpid()}.jsonl").open("a")
        super().__init__(hooks=hooks, **settings)

    def process(self, record: ShareConsumerRecord) -> None:
        time.sleep(self.delay_ms / 1000)
        self._log.write(json.dumps({"kind": "record", "pid": os.getpid(), "p": record.partition,
                                    "o": record.offset, "c": record.delivery_count}) + "\n")
        self._log.flush()
