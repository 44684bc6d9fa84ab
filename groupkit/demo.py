"""The groupkit demo: a local broker, a stream of records, and a group of workers sharing it.

Starts a LocalBroker, creates a topic, produces to it continuously, starts two GroupConsumer
workers (threads), adds a third, stops the first, and prints every assignment and revocation
as it happens, then a summary: records produced and consumed, commits, rebalances, duplicates.
"""

from __future__ import annotations

import collections
import functools
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer, RunSummary
from groupkit.hooks import Event, Joined, Synced
from groupkit.producer import Producer, RecordMetadata
from groupkit.testing import LocalBroker

__all__ = ["DemoSummary", "run_demo"]

TOPIC = "demo-orders"
GROUP = "demo-workers"
# Small timeouts so the group forms in seconds (the demo broker holds a JoinGroup about half
# the session timeout before answering it). cooperative-sticky shows incremental rebalancing:
# a worker joining or leaving moves only the partitions that change hands.
WORKER_SETTINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "auto_commit_interval_ms": 500,
    "auto_offset_reset": "earliest", "assignors": ["cooperative-sticky"],
}


@attrs.frozen
class DemoSummary:
    """What the demo did; ``lost`` lists produced records nobody consumed (always empty)."""

    produced: int
    consumed: int
    duplicates: int
    lost: int
    commits: int
    rebalances: int
    seconds: float


@attrs.define
class _Ledger:
    """Who owns which partition and which records were seen, shared by the worker threads."""

    out: Callable[[str], None]
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    changed: threading.Condition = attrs.field(init=False)
    owners: dict[str, set[int]] = attrs.field(factory=dict)
    generations: set[int] = attrs.field(factory=set)
    seen: collections.Counter[tuple[int, int]] = attrs.field(factory=collections.Counter)
    #: Each worker's generation as of its last SyncGroup answer.
    synced: dict[str, int] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def hook(self, worker: str, event: Event) -> None:
        """Counts the group's generations (each one is a completed rebalance) and notes the
        generation each worker last synced in."""
        if isinstance(event, Joined):
            with self.lock:
                self.generations.add(event.generation_id)
                self.changed.notify_all()
        elif isinstance(event, Synced):
            with self.lock:
                self.synced[worker] = event.generation_id
                self.changed.notify_all()

    def record(self, records: list[ConsumerRecord]) -> None:
        with self.lock:
            self.seen.update((r.partition, r.offset) for r in records)
            self.changed.notify_all()

    def update(self, worker: str, added: set[int], removed: set[int], verb: str) -> None:
        with self.lock:
            owned = self.owners.setdefault(worker, set())
            owned |= added
            owned -= removed
            shown = ", ".join(str(p) for p in sorted(added | removed)) or "nothing"
            self.out(f"  {worker:<9} {verb:<8} partitions {shown:<16} now owns "
                     f"{sorted(owned)}")
            self.changed.notify_all()

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        with self.lock:
            if not self.changed.wait_for(condition, timeout):
                raise TimeoutError(f"the demo waited {timeout:.0f}s for {what}")

    def settled(self, workers: list[str], partitions: int) -> bool:
        """Whether exactly ``workers`` own the topic evenly and each has synced in the newest
        generation (call under lock). Only then is a worker's last commit on stop accepted: in
        a rebalance the coordinator refuses commits of the generation that is ending, and a
        member that gained nothing gets no assignment callback to show it is still rejoining."""
        newest = max(self.generations, default=-1)
        return self.covered_by(workers, partitions) \
            and all(self.synced.get(w) == newest for w in workers)

    def covered_by(self, workers: list[str], partitions: int) -> bool:
        """Whether exactly ``workers`` own the topic, each partition once, evenly (call under
        lock). Evenly: a cooperative rebalance hands partitions over in two rounds, and a worker
        keeps its old ones until its round completes, so full cover alone comes too early."""
        owned = [p for w in workers for p in self.owners.get(w, ())]
        others = any(self.owners.get(w) for w in self.owners if w not in workers)
        sizes = [len(self.owners.get(w, ())) for w in workers]
        return not others and sorted(owned) == list(range(partitions)) \
            and min(sizes) == partitions // len(workers) and max(sizes) - min(sizes) <= 1


class _Worker(GroupConsumer):
    """A demo worker: notes each record and reports its rebalances to the ledger."""

    topics = [TOPIC]
    group_id = GROUP

    def __init__(self, name: str, ledger: _Ledger, **settings: Any) -> None:
        super().__init__(**settings)
        self.name = name
        self.ledger = ledger

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        self.ledger.record(records)

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self.ledger.update(self.name, {tp.partition for tp in partitions}, set(), "assigned")

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self.ledger.update(self.name, set(), {tp.partition for tp in partitions}, "revoked")

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        self.ledger.update(self.name, set(), {tp.partition for tp in partitions}, "lost")


@attrs.define
class _Running:
    worker: _Worker
    thread: threading.Thread
    result: list[RunSummary | BaseException]


def _start(name: str, ledger: _Ledger, settings: dict[str, Any]) -> _Running:
    worker = _Worker(name, ledger, **settings, hooks=[functools.partial(ledger.hook, name)])
    result: list[RunSummary | BaseException] = []

    def run() -> None:
        try:
            result.append(worker.run())
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return _Running(worker, thread, result)


def _finish(running: _Running, timeout: float) -> RunSummary:
    running.worker.stop()
    running.thread.join(timeout)
    if running.thread.is_alive() or not running.result:
        raise TimeoutError(f"{running.worker.name} did not stop within {timeout:.0f}s")
    outcome = running.result[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _produce(producer: Producer, partitions: int, rate: float, stop: threading.Event,
             sent: list[Future[RecordMetadata]]) -> None:
    """Send ``rate`` records a second (in ten bursts a second) until ``stop`` is set."""
    burst = max(1, round(rate / 10))
    n = 0
    while not stop.wait(0.1):
        for _ in range(burst):
            sent.append(producer.send(TOPIC, f"order {n}".encode(), partition=n % partitions))
            n += 1


def run_demo(partitions: int = 6, rate: float = 200.0, out: Callable[[str], None] = print,
             wait: float = 45.0) -> DemoSummary:
    """Run the whole demo; ``wait`` bounds each phase. Returns the summary it printed."""
    began = time.monotonic()
    ledger = _Ledger(out)
    with LocalBroker() as broker:
        bootstrap = broker.bootstrap_servers
        out(f"broker: Tansu on {bootstrap}")
        with Admin(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([TOPIC], num_partitions=partitions)
        out(f"topic:  {TOPIC} with {partitions} partitions; producing {rate:g} records/s")
        settings = {**WORKER_SETTINGS, "bootstrap_servers": bootstrap}
        stop_producing = threading.Event()
        sent: list[Future[RecordMetadata]] = []
        with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
            feeder = threading.Thread(target=_produce, name="demo-producer", daemon=True,
                                      args=(producer, partitions, rate, stop_producing, sent))
            feeder.start()
            summaries: list[RunSummary] = []
            try:
                out("\nstarting worker-1 and worker-2")
                workers = {n: _start(n, ledger, settings) for n in ("worker-1", "worker-2")}
                ledger.wait(lambda: ledger.covered_by(["worker-1", "worker-2"], partitions),
                            wait, "two workers to share the topic")
                out("\nadding worker-3")
                workers["worker-3"] = _start("worker-3", ledger, settings)
                ledger.wait(lambda: ledger.settled(list(workers), partitions), wait,
                            "three workers to share the topic")
                out("\nstopping worker-1 (it commits, then leaves the group)")
                summaries.append(_finish(workers.pop("worker-1"), wait))
                ledger.wait(lambda: ledger.settled(list(workers), partitions), wait,
                            "the two remaining workers to share the topic")
            finally:
                stop_producing.set()
                feeder.join(wait)
            producer.flush(wait)
            produced = {(meta.partition, meta.offset) for meta in (f.result() for f in sent)}
            out(f"\nproduced {len(produced)} records; waiting for the workers to catch up")
            try:
                ledger.wait(lambda: produced <= ledger.seen.keys(), wait,
                            "every produced record to be consumed")
            finally:
                # One at a time, each after the rest hold every partition again, synced in the
                # newest generation: a worker that stops while the group rebalances cannot
                # commit its last positions (the coordinator refuses commits of a generation
                # that is ending).
                remaining = list(workers)
                for name in list(workers):
                    summaries.append(_finish(workers[name], wait))
                    remaining.remove(name)
                    if remaining:
                        ledger.wait(lambda: ledger.settled(remaining, partitions), wait,
                                    "the remaining workers to hold every partition")
        with ledger.lock:
            consumed = sum(ledger.seen.values())
            duplicates = consumed - len(ledger.seen)
            lost = len(produced - ledger.seen.keys())
        summary = DemoSummary(
            produced=len(produced), consumed=consumed, duplicates=duplicates, lost=lost,
            commits=sum(s.commits for s in summaries),
            rebalances=len(ledger.generations),
            seconds=round(time.monotonic() - began, 1))
        out(f"\nsummary: {summary.produced} produced, {summary.consumed} consumed,"
            f" {summary.duplicates} duplicates, {summary.lost} lost, {summary.commits} commits,"
            f" {summary.rebalances} rebalances, {summary.seconds}s")
        show_group(bootstrap, GROUP, out, wait)
    return summary


def show_group(bootstrap: str, group: str, out: Callable[[str], None], wait: float) -> None:
    """Show a demo's group as an operator would see it: ``groupkit groups describe``."""
    command = [str(Path(sys.executable).with_name("groupkit")), "groups", "describe", group,
               "--bootstrap-server", bootstrap]
    out(f"\n$ groupkit groups describe {group} --bootstrap-server {bootstrap}")
    shown = subprocess.run(command, capture_output=True, text=True, timeout=wait)
    out((shown.stdout + shown.stderr).rstrip())
