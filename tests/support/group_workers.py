"""Workers and a shared board for the group-level tests.

``Board`` collects what every worker did (records, assignments, revocations, with times) and lets
a test wait, bounded, for a condition on it. Run as a script, this module runs one ``Tally``
worker on the main thread and prints the same facts as JSON lines, so a test can kill it or
send it signals and read what it did (``Spawned`` feeds those lines into a Board).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from assignors import TopicPartition
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer, RunSummary
from tests.support import peers

ROOT = Path(__file__).resolve().parents[2]
#: GroupConsumer settings: the peers' small timeouts, from the earliest record.
FAST_GROUP = {**peers.FAST_GROUP, "auto_offset_reset": "earliest"}


class Board:
    """What the workers of one test did, guarded by one condition variable."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.records: list[tuple[str, int, int, float]] = []
        self.events: list[tuple[str, str, frozenset[int], float]] = []
        self.owners: dict[str, set[int]] = {}
        self.finished: dict[str, dict[str, Any]] = {}

    def record(self, worker: str, partition: int, offset: int, t: float | None = None) -> None:
        with self.changed:
            self.records.append((worker, partition, offset, time.monotonic() if t is None else t))
            self.changed.notify_all()

    def rebalance(self, worker: str, kind: str, partitions: Iterable[int],
                  t: float | None = None) -> None:
        with self.changed:
            parts = frozenset(partitions)
            self.events.append((worker, kind, parts, time.monotonic() if t is None else t))
            owned = self.owners.setdefault(worker, set())
            if kind == "assigned":
                owned |= parts
            else:
                owned -= parts
            self.changed.notify_all()

    def finish(self, worker: str, summary: dict[str, Any]) -> None:
        with self.changed:
            self.finished[worker] = summary
            self.changed.notify_all()

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``condition()`` (called under the lock) holds; AssertionError after timeout."""
        with self.changed:
            if not self.changed.wait_for(condition, timeout):
                raise AssertionError(f"waited {timeout:.0f}s for {what}; owners={self.owners}")

    def seen(self, worker: str | None = None) -> set[tuple[int, int]]:
        with self.changed:
            return {(p, o) for w, p, o, _ in self.records if worker is None or w == worker}

    def count(self, worker: str) -> int:
        with self.changed:
            return sum(1 for w, *_ in self.records if w == worker)

    def covered(self, workers: Iterable[str], partitions: int) -> bool:
        """Exactly ``workers`` own every partition once, each holding some (call under lock)."""
        names = set(workers)
        owned = sorted(p for w in names for p in self.owners.get(w, ()))
        strangers = any(parts for w, parts in self.owners.items() if w not in names)
        return (not strangers and owned == list(range(partitions))
                and all(self.owners.get(w) for w in names))


class Tally(GroupConsumer):
    """Tells the board about every record (after ``delay`` seconds of "work") and rebalance."""

    group_id = "unset"
    topics = ["unset"]

    def __init__(self, name: str, board: Board, delay: float = 0.0, **settings: Any) -> None:
        super().__init__(**{**FAST_GROUP, **settings})
        self.name = name
        self.board = board
        self.delay = delay

    def process(self, record: ConsumerRecord) -> None:
        if self.delay:
            time.sleep(self.delay)
        self.board.record(self.name, record.partition, record.offset)

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self.board.rebalance(self.name, "assigned", (tp.partition for tp in partitions))

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self.board.rebalance(self.name, "revoked", (tp.partition for tp in partitions))

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        self.board.rebalance(self.name, "lost", (tp.partition for tp in partitions))


class InThread:
    """A worker running ``run()`` on a thread of this process."""

    def __init__(self, worker: GroupConsumer) -> None:
        self.worker = worker
        self.outcome: list[RunSummary | BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.outcome.append(self.worker.run())
        except BaseException as exc:
            self.outcome.append(exc)

    def stop(self, timeout: float = 30.0) -> RunSummary:
        """stop() the worker and wait (bounded) for run() to return its summary."""
        self.worker.stop()
        return self.join(timeout)

    def join(self, timeout: float = 30.0) -> RunSummary:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "run() did not return in time"
        outcome = self.outcome[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class _PrintingBoard(Board):
    """The subprocess side: every fact becomes one JSON line on stdout."""

    def record(self, worker: str, partition: int, offset: int, t: float | None = None) -> None:
        _say(rec=[partition, offset], t=time.monotonic())

    def rebalance(self, worker: str, kind: str, partitions: Iterable[int],
                  t: float | None = None) -> None:
        _say(kind=kind, partitions=sorted(partitions), t=time.monotonic())


def _say(**fact: Any) -> None:
    sys.stdout.write(json.dumps(fact) + "\n")
    sys.stdout.flush()


class Spawned:
    """A Tally worker in a subprocess whose printed facts land on ``board`` as ``name``."""

    def __init__(self, name: str, board: Board, bootstrap: str, group: str, topic: str,
                 **options: Any) -> None:
        args = [sys.executable, __file__, name, bootstrap, group, topic]
        for key, value in options.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        self.name = name
        self.board = board
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=ROOT, env={**os.environ,
                                                               "PYTHONPATH": str(ROOT)})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            fact = json.loads(line)
            if "rec" in fact:
                self.board.record(self.name, *fact["rec"], t=fact["t"])
            elif "kind" in fact:
                self.board.rebalance(self.name, fact["kind"], fact["partitions"], t=fact["t"])
            elif "summary" in fact:
                self.board.finish(self.name, fact["summary"])

    def wait(self, timeout: float) -> int:
        """The exit code, after the process ended and every line it printed was read."""
        code = self.proc.wait(timeout)
        self.reader.join(timeout)
        return code

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("name", "bootstrap", "group", "topic"):
        parser.add_argument(name)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--auto-commit-interval-ms", type=int, default=5000)
    parser.add_argument("--session-timeout-ms", type=int, default=FAST_GROUP["session_timeout_ms"])
    parser.add_argument("--group-instance-id", default=None)
    args = parser.parse_args()
    worker = Tally(args.name, _PrintingBoard(), delay=args.delay,
                   bootstrap_servers=args.bootstrap, group_id=args.group, topics=[args.topic],
                   auto_commit_interval_ms=args.auto_commit_interval_ms,
                   session_timeout_ms=args.session_timeout_ms,
                   group_instance_id=args.group_instance_id)
    summary = worker.run()
    _say(summary={"processed": summary.records_processed, "commits": summary.commits})


if __name__ == "__main__":
    main()
