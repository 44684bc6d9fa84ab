"""Rebalance cost of the two group protocols: a member joins a busy group of 16.

On confluent-kafka's mock cluster (the one broker here with the consumer group protocol,
KIP-848), for groupkit and confluent-kafka, with ``classic`` (cooperative-sticky, session 6 s,
heartbeat 0.5 s) and ``consumer`` (the mock's server-side assignment, its member session set to
6 s and heartbeat to 0.5 s through librdkafka's C API): 16 members of one client share a
32-partition topic that a producer keeps writing to (about 4,000 records/s); once they settle, a
17th member is told to join. Rows, per protocol:

- ``+1 of 16 <protocol>``: seconds from the 17th member's "go" to the moment the 17 members hold
  every partition again, each some, none twice (the last listener call that made it so);
- ``+1 of 16 <protocol> records``: records the group processed in that window, per second (a
  stop-the-world rebalance processes none while it lasts);
- ``+1 of 16 <protocol> steady``: records per second in the 2 s before the join, for scale
  (17 processes on a small machine may not keep up with the producer).

Every member runs in a process of its own (this module with ``member`` as first argument) that
has imported its client before it is told "go". The producer is confluent-kafka's; setup is not
measured.

    .venv/bin/python -m bench.protocols [--clients groupkit,confluent-kafka]
        [--protocols classic,consumer] [--members 16]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.table import Row, print_rows  # noqa: E402

CLIENTS = ("groupkit", "confluent-kafka")
PROTOCOLS = ("classic", "consumer")
PARTITIONS = 32
SESSION_MS, HEARTBEAT_MS = 6_000, 500
RATE = 4_000  # records/s the producer aims at while the group works
POLL_S = 0.2
#: The group's steady rate is measured over this many seconds before the 17th member joins.
STEADY_S = 2.0
WAIT_S = 120.0
#: groupkit speaks the classic protocol to the mock pinned to Kafka 2.3's versions (the mock
#: advertises JoinGroup v6 and SyncGroup v4 but closes the connection on them: see
#: docs/test-brokers.md).
CLASSIC_PIN = "2.3"


def _emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _groupkit(protocol: str, bootstrap: str, group: str, topic: str,
              owned: Callable[[str, list[int]], None]) -> tuple[Callable[[], int],
                                                                  Callable[[], None]]:
    from groupkit.consumer import Consumer, ConsumerRebalanceListener
    from groupkit.hooks import GroupRequestDone

    def failed_sync(event: object) -> None:
        # Why a classic group on the mock may never settle (docs/test-brokers.md): say it.
        if isinstance(event, GroupRequestDone) and event.api == "SyncGroup" and event.error:
            _emit(sync_failed=event.error)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, partitions):  # type: ignore[no-untyped-def]
            owned("add", [tp.partition for tp in partitions])

        def on_partitions_revoked(self, partitions):  # type: ignore[no-untyped-def]
            owned("remove", [tp.partition for tp in partitions])

        def on_partitions_lost(self, partitions):  # type: ignore[no-untyped-def]
            owned("remove", [tp.partition for tp in partitions])

    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": group,
                                   "auto_offset_reset": "latest", "enable_auto_commit": False,
                                   "group_protocol": protocol}
    if protocol == "classic":
        settings.update(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                        assignors=["cooperative-sticky"])
        settings["api_version"] = CLASSIC_PIN
    consumer = Consumer(hooks=[failed_sync], **settings)
    consumer.subscribe([topic], listener=Listener())
    return (lambda: len(consumer.poll(POLL_S))), consumer.close


def _confluent(protocol: str, bootstrap: str, group: str, topic: str,
               owned: Callable[[str, list[int]], None]) -> tuple[Callable[[], int],
                                                                   Callable[[], None]]:
    from confluent_kafka import Consumer

    config: dict[str, object] = {"bootstrap.servers": bootstrap, "group.id": group,
                                 "auto.offset.reset": "latest", "enable.auto.commit": False,
                                 "group.protocol": protocol}
    if protocol == "classic":
        config.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                       "partition.assignment.strategy": "cooperative-sticky"})
    consumer = Consumer(config)
    consumer.subscribe([topic],
                       on_assign=lambda _c, tps: owned("add", [tp.partition for tp in tps]),
                       on_revoke=lambda _c, tps: owned("remove", [tp.partition for tp in tps]),
                       on_lost=lambda _c, tps: owned("remove", [tp.partition for tp in tps]))

    def poll() -> int:
        return sum(1 for m in consumer.consume(500, POLL_S) if m.error() is None)

    return poll, consumer.close


MEMBERS = {"groupkit": _groupkit, "confluent-kafka": _confluent}
MODULES = {"groupkit": ("groupkit.consumer",), "confluent-kafka": ("confluent_kafka",)}


def member_main(client: str, protocol: str, bootstrap: str, group: str, topic: str) -> None:
    """Wait for "go", join, report every ownership change and every poll's records, until
    "leave"."""
    commands: queue.Queue[str] = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("leave")

    threading.Thread(target=read_stdin, daemon=True).start()
    for module in MODULES[client]:
        importlib.import_module(module)
    _emit(ready=True)
    if commands.get() != "go":
        return
    held: set[int] = set()

    def owned(change: str, partitions: list[int]) -> None:
        if change == "add":
            held.update(partitions)
        else:
            held.difference_update(partitions)
        _emit(owned=sorted(held), t=time.monotonic())

    poll, close = MEMBERS[client](protocol, bootstrap, group, topic, owned)
    while commands.empty():
        got = poll()
        if got:
            _emit(records=got, t=time.monotonic())
    close()


class Member:
    """One member subprocess and what it reported."""

    def __init__(self, client: str, protocol: str, bootstrap: str, group: str,
                 topic: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.protocols", "member", client, protocol, bootstrap,
             group, topic], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.owned: set[int] = set()
        self.changed = 0.0
        self.records: list[tuple[float, int]] = []
        #: Failed SyncGroups by error name (groupkit members report them).
        self.sync_failed: dict[str, int] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            with self.lock:
                if event.get("ready"):
                    self.ready.set()
                elif "owned" in event:
                    self.owned, self.changed = set(event["owned"]), event["t"]
                elif "records" in event:
                    self.records.append((event["t"], event["records"]))
                elif "sync_failed" in event:
                    error = event["sync_failed"]
                    self.sync_failed[error] = self.sync_failed.get(error, 0) + 1

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("leave")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _covered(members: list[Member]) -> float | None:
    """When ``members`` came to hold every partition once, each some; None while they do not."""
    seen: list[int] = []
    for m in members:
        with m.lock:
            if not m.owned:
                return None
            seen.extend(m.owned)
    if sorted(seen) != list(range(PARTITIONS)):
        return None
    return max(m.changed for m in members)


def _wait_covered(members: list[Member]) -> float:
    deadline = time.monotonic() + WAIT_S
    while (at := _covered(members)) is None:
        if time.monotonic() > deadline:
            failed: dict[str, int] = {}
            for m in members:
                with m.lock:
                    for error, n in m.sync_failed.items():
                        failed[error] = failed.get(error, 0) + n
            why = "; failed SyncGroups: " + ", ".join(
                f"{n} {error}" for error, n in sorted(failed.items())) if failed else ""
            raise RuntimeError(f"the {len(members)} members did not cover the topic within"
                               f" {WAIT_S:.0f} s{why}")
        time.sleep(0.01)
    return at


def _producer(bootstrap: str, topic: str, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent, started = 0, time.monotonic()
    while not stop.is_set():
        # Behind schedule (a busy machine), it catches up at most a tenth of a second's worth.
        due = int((time.monotonic() - started) * RATE)
        sent = max(sent, due - RATE // 10)
        try:
            while sent < due:
                producer.produce(topic, b"v" * 100, partition=sent % PARTITIONS)
                sent += 1
        except BufferError:
            pass  # the local queue is full: the poll below lets it drain
        producer.poll(0.01)
    producer.flush(10)


def _rate(members: list[Member], start: float, end: float) -> float:
    """Records per second ``members`` processed between ``start`` and ``end``."""
    processed = 0
    for m in members:
        with m.lock:
            processed += sum(n for t, n in m.records if start <= t <= end)
    return processed / (end - start) if end > start else 0.0


def one_join(client: str, protocol: str, members: int) -> tuple[float, float, float]:
    """(seconds until the group of ``members`` + 1 covers the topic again, records per second
    the group processed in that time, and in the ``STEADY_S`` seconds before the join)."""
    from tests.support.mock_cluster import MockCluster

    with MockCluster(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS) as mock:
        topic, group = "bench-protocols", f"bench-{uuid.uuid4().hex[:8]}"
        mock.create_topic(topic, PARTITIONS)
        stop = threading.Event()
        producing = threading.Thread(target=_producer, args=(mock.bootstrap_servers, topic, stop),
                                     daemon=True)
        producing.start()
        group_members = [Member(client, protocol, mock.bootstrap_servers, group, topic)
                         for _ in range(members + 1)]
        try:
            for m in group_members:
                if not m.ready.wait(WAIT_S):
                    raise RuntimeError("a member did not start in time")
            first, joiner = group_members[:members], group_members[members]
            for m in first:
                m.send("go")
            _wait_covered(first)
            time.sleep(STEADY_S + 0.5)  # settled: every member fetching
            started = time.monotonic()
            joiner.send("go")
            ended = _wait_covered(group_members)
            took = ended - started
            return took, _rate(group_members, started, ended), _rate(
                group_members, started - STEADY_S, started)
        finally:
            stop.set()
            for m in group_members:
                m.stop()
            producing.join(15)


def measure(clients: tuple[str, ...] = CLIENTS, protocols: tuple[str, ...] = PROTOCOLS,
            members: int = 16) -> list[Row]:
    rows = []
    missing = (None, None, None)
    for protocol in protocols:
        figures: dict[str, tuple[float | None, float | None, float | None]] = {}
        for client in clients:
            try:
                figures[client] = one_join(client, protocol, members)
            except RuntimeError as exc:
                print(f"  {client} {protocol}: {exc}", file=sys.stderr, flush=True)
                figures[client] = missing
        peers = [c for c in clients if c != "groupkit"]
        mine = figures.get("groupkit", missing)
        name = f"+1 of {members} {protocol}"
        rows.append(Row(name, "s", mine[0], {p: figures[p][0] for p in peers},
                        higher_is_better=False))
        rows.append(Row(f"{name} records", "rec/s", mine[1], {p: figures[p][1] for p in peers}))
        rows.append(Row(f"{name} steady", "rec/s", mine[2], {p: figures[p][2] for p in peers}))
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "member":
        member_main(*sys.argv[2:7])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--members", type=int, default=16)
    args = parser.parse_args()
    print_rows(measure(tuple(args.clients.split(",")), tuple(args.protocols.split(",")),
                       args.members))


if __name__ == "__main__":
    main()
