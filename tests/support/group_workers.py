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

import confluent_kafka

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer, RunSummary
from groupkit.producer import Producer

ROOT = Path(__file__).resolve().parents[2]
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
              "auto_offset_reset": "earliest"}


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


class ConfluentMember:
    """A confluent-kafka consumer in the same group, on a thread, reporting to the board."""

    def __init__(self, name: str, board: Board, bootstrap: str, group: str, topic: str,
                 strategy: str) -> None:
        self.name = name
        self.board = board
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "session.timeout.ms": FAST_GROUP["session_timeout_ms"],
            "heartbeat.interval.ms": FAST_GROUP["heartbeat_interval_ms"],
            "partition.assignment.strategy": strategy})
        self.consumer.subscribe(
            [topic],
            on_assign=lambda _c, tps: board.rebalance(name, "assigned", _parts(tps)),
            on_revoke=lambda _c, tps: board.rebalance(name, "revoked", _parts(tps)),
            on_lost=lambda _c, tps: board.rebalance(name, "lost", _parts(tps)))
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            for message in self.consumer.consume(num_messages=200, timeout=0.2):
                if message.error() is None:
                    self.board.record(self.name, message.partition(), message.offset())
        self.consumer.close()

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.name} did not close in time"


def _parts(tps: list[Any]) -> list[int]:
    return [tp.partition for tp in tps]


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


# --- broker-side helpers ----------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=partitions)


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> set[tuple[int, int]]:
    """Send ``n`` records round-robin over the partitions; returns their (partition, offset)."""
    with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
        futures = [producer.send(topic, f"r{i}".encode(), partition=i % partitions)
                   for i in range(n)]
        producer.flush(30)
        return {(m.partition, m.offset) for m in (f.result(30) for f in futures)}


class Stream:
    """Produces round-robin over the partitions, ``rate`` records a second, until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float) -> None:
        self.producer = Producer(bootstrap_servers=bootstrap, linger_ms=5)
        self.futures: list[Any] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(topic, partitions, max(1, round(rate / 20))), daemon=True)
        self.thread.start()

    def _run(self, topic: str, partitions: int, burst: int) -> None:
        n = 0
        while not self.stopping.wait(0.05):
            for _ in range(burst):
                self.futures.append(self.producer.send(topic, b"x", partition=n % partitions))
                n += 1

    def stop(self) -> set[tuple[int, int]]:
        """Stop producing; returns (partition, offset) of every record sent."""
        self.stopping.set()
        self.thread.join(30)
        self.producer.flush(30)
        self.producer.close(30)
        return {(m.partition, m.offset) for m in (f.result(30) for f in self.futures)}


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offset of each partition of ``topic`` (None where none)."""
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    with Admin(bootstrap_servers=bootstrap) as admin:
        found = admin.list_group_offsets(group, wanted)
    return {p: (found[tp].offset if tp in found and found[tp].offset >= 0 else None)
            for p, tp in enumerate(wanted)}


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
