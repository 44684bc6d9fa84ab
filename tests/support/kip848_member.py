"""One consumer-protocol (KIP-848) group member in a process of its own, reporting as JSON lines.

Run as ``python -m tests.support.kip848_member CLIENT NAME BOOTSTRAP GROUP TOPIC [options]``
with CLIENT ``groupkit`` (a GroupConsumer, ``group_protocol="consumer"``) or ``confluent``
(confluent-kafka, ``group.protocol=consumer``). Both process every record, then commit what
they processed (groupkit: every ``--commit-ms``, on revocation and on stop; confluent: after
every batch and in ``on_revoke``), and print, with ``time.monotonic()`` (one clock for every
process of the machine):

- ``{"kind": "assigned"|"revoked"|"lost", "partitions": [...], "t": ...}`` from the listener;
- ``{"rec": [partition, offset], "t": ...}`` once a record is processed;
- ``{"committed": {partition: next offset}, "t": ...}`` once a commit succeeded.

SIGTERM stops it in order (commit, leave); the test SIGKILLs it to crash it. ``Spawned``
starts one from a test and feeds its lines into a ``Timeline``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[2]

_lock = threading.Lock()


def say(**fact: Any) -> None:
    with _lock:
        sys.stdout.write(json.dumps({**fact, "t": time.monotonic()}) + "\n")
        sys.stdout.flush()


def run_groupkit(args: argparse.Namespace) -> None:
    from assignors import TopicPartition
    from groupkit.consumer import ConsumerRecord
    from groupkit.group_consumer import GroupConsumer
    from groupkit.hooks import CommitDone

    class Worker(GroupConsumer):
        def process(self, record: ConsumerRecord) -> None:
            if args.delay:
                time.sleep(args.delay)
            say(rec=[record.partition, record.offset])

        def on_assigned(self, partitions: set[TopicPartition]) -> None:
            say(kind="assigned", partitions=sorted(tp.partition for tp in partitions))

        def on_revoked(self, partitions: set[TopicPartition]) -> None:
            say(kind="revoked", partitions=sorted(tp.partition for tp in partitions))

        def on_lost(self, partitions: set[TopicPartition]) -> None:
            say(kind="lost", partitions=sorted(tp.partition for tp in partitions))

    def committed(event: object) -> None:
        if isinstance(event, CommitDone) and event.offsets:
            say(committed={str(p): o for _, p, o in event.offsets})

    settings: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap, "group_id": args.group, "topics": [args.topic],
        "group_protocol": "consumer", "auto_offset_reset": "earliest",
        "auto_commit_interval_ms": args.commit_ms, "client_id": args.name,
        "hooks": [committed]}
    if args.instance:
        settings["group_instance_id"] = args.instance
    Worker(**settings).run()


def run_confluent(args: argparse.Namespace) -> None:
    import confluent_kafka

    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
              "group.protocol": "consumer", "client.id": args.name,
              "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if args.instance:
        config["group.instance.id"] = args.instance
    consumer = confluent_kafka.Consumer(config)
    done: dict[int, int] = {}  # next offset to read, per partition processed since the commit
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())

    def commit(partitions: Iterable[int]) -> None:
        offsets = {p: done.pop(p) for p in list(partitions) if p in done}
        if offsets:
            consumer.commit(offsets=[confluent_kafka.TopicPartition(args.topic, p, o)
                                     for p, o in offsets.items()], asynchronous=False)
            say(committed={str(p): o for p, o in offsets.items()})

    def on_assign(_: Any, tps: list[Any]) -> None:
        say(kind="assigned", partitions=sorted(tp.partition for tp in tps))

    def on_revoke(_: Any, tps: list[Any]) -> None:
        commit(tp.partition for tp in tps)
        say(kind="revoked", partitions=sorted(tp.partition for tp in tps))

    def on_lost(_: Any, tps: list[Any]) -> None:
        for tp in tps:
            done.pop(tp.partition, None)
        say(kind="lost", partitions=sorted(tp.partition for tp in tps))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    try:
        while not stopping.is_set():
            messages = [m for m in consumer.consume(200, 0.2) if m.error() is None]
            for m in messages:
                if args.delay:
                    time.sleep(args.delay)
                say(rec=[m.partition(), m.offset()])
                done[m.partition()] = m.offset() + 1
            if messages:
                commit(list(done))
    finally:
        commit(list(done))
        consumer.close()


@attrs.define
class Timeline:
    """What every member process said, in arrival order, as (name, fact) pairs."""

    facts: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    changed: threading.Condition = attrs.field(factory=threading.Condition)

    def add(self, name: str, fact: dict[str, Any]) -> None:
        with self.changed:
            self.facts.append((name, fact))
            self.changed.notify_all()

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait (bounded) until ``condition()`` holds; it is called under the lock."""
        with self.changed:
            if not self.changed.wait_for(condition, timeout):
                raise AssertionError(f"waited {timeout:.0f} s for {what}; owners:"
                                     f" {self.owners()}")

    def owners(self) -> dict[str, set[int]]:
        """What each member holds now, by its assigned/revoked/lost reports."""
        held: dict[str, set[int]] = {}
        for name, fact in list(self.facts):
            kind = fact.get("kind")
            if kind == "assigned":
                held.setdefault(name, set()).update(fact["partitions"])
            elif kind in ("revoked", "lost"):
                held.setdefault(name, set()).difference_update(fact["partitions"])
            elif kind == "stopped":
                held[name] = set()
        return held

    def covered(self, names: Iterable[str], partitions: int) -> bool:
        """Exactly ``names`` hold every partition, once each, each holding some."""
        wanted = set(names)
        owners = self.owners()
        owned = sorted(p for n in wanted for p in owners.get(n, ()))
        strangers = any(parts for n, parts in owners.items() if n not in wanted)
        return (not strangers and owned == list(range(partitions))
                and all(owners.get(n) for n in wanted))

    def records(self, name: str | None = None) -> list[tuple[int, int]]:
        return [tuple(f["rec"]) for n, f in list(self.facts)  # type: ignore[misc]
                if "rec" in f and (name is None or n == name)]


class Spawned:
    """A member process whose lines land on ``timeline`` under ``name``."""

    def __init__(self, timeline: Timeline, client: str, name: str, bootstrap: str, group: str,
                 topic: str, *, instance: str | None = None, delay: float = 0.0) -> None:
        args = [sys.executable, "-m", "tests.support.kip848_member", client, name, bootstrap,
                group, topic, "--delay", str(delay)]
        if instance is not None:
            args += ["--instance", instance]
        self.name = name
        self.timeline = timeline
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=ROOT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.timeline.add(self.name, json.loads(line))

    def terminate(self, timeout: float) -> int:
        """An orderly stop (SIGTERM: commit, leave); the exit code."""
        self.proc.terminate()
        code = self.proc.wait(timeout)
        self.reader.join(timeout)
        return code

    def kill(self) -> float:
        """SIGKILL; the monotonic time it was sent. The timeline notes the member as stopped
        then: a dead process holds nothing, whatever its group still thinks."""
        at = time.monotonic()
        self.proc.kill()
        self.proc.wait(10)
        self.reader.join(10)
        self.timeline.add(self.name, {"kind": "stopped", "partitions": [], "t": at})
        return at

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("client", "name", "bootstrap", "group", "topic"):
        parser.add_argument(name)
    parser.add_argument("--instance", default=None)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--commit-ms", type=int, default=300)
    args = parser.parse_args()
    (run_groupkit if args.client == "groupkit" else run_confluent)(args)
    say(kind="stopped", partitions=[])


if __name__ == "__main__":
    main()
