"""Consumer-group benchmark: groupkit against aiokafka, kafka-python and confluent-kafka.

Every member runs in a subprocess of its own (this file with ``member`` as first argument), so
the CPU and memory measured are the member's alone and members of one group join in parallel;
a member has imported its client library before it is told "go", so no row times imports.
All clients get the same settings: session 6000 ms, heartbeat 500 ms, range assignor, no
auto-commit, earliest reset. Rows:

- ``join N``: from "go" to the moment N members hold a non-empty, disjoint assignment that covers
  every partition of a 32-partition topic (N in 1, 4, 16);
- ``leave``: from one of 4 members closing (LeaveGroup) to the 3 others covering the topic again;
- ``kill``: from SIGKILL of one of 3 members to the 2 others covering the topic again (session
  expiry bounds this one);
- ``first``: from "go" to the first record of a topic that already holds records (a new
  group, earliest reset): joining, syncing, finding the offsets and the first fetch;
- ``consume <codec>``: records/s of one member reading N records of 100 bytes from an
  8-partition topic (written uncompressed, and snappy), counted from the end of its first poll
  that returned records to its last record (a client that returns the whole topic in that
  first poll gets no rate, "-"); ``cpu`` is the member's CPU seconds from "go" to its last record, ``rss`` its peak
  resident memory; with ``--repeat R`` the consume rows run in R rounds, every client in turn,
  and each figure is the best of its rounds;
- ``idle cpu`` / ``idle rss``: one joined member per client polling an empty topic, all
  clients' members in the same D seconds: CPU time over wall time (the threads' schedstat run
  time) and resident memory at the end, read from /proc; ``idle cpu java`` / ``idle rss
  java``: the same with session 45000 ms and heartbeat 3000 ms, the Java client's defaults
  (and groupkit's and librdkafka's), the timing an idle member runs with unless told
  otherwise.

Setup (topics, producing the records) uses confluent-kafka for speed; it is not measured.

    .venv/bin/python -m bench.group [--clients groupkit,kafka-python,confluent-kafka]
        [--rows join,leave,kill,consume,idle] [--members 1,4,16] [--records N] [--idle-seconds S]
        [--repeat R]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench.proc import run_seconds
from bench.table import Row, print_rows

CLIENTS = ("groupkit", "aiokafka", "kafka-python", "confluent-kafka")
ROWS = ("join", "leave", "kill", "consume", "idle")
CODECS = ("none", "snappy")
GROUP_PARTITIONS = 32
CONSUME_PARTITIONS = 8
# The group timing of every member: the bench's fast one, or with --java-timing the Java
# client's defaults (members are subprocesses of this module: they read it from the environment).
SESSION_MS = int(os.environ.get("GROUPKIT_BENCH_SESSION_MS", "6000"))
HEARTBEAT_MS = int(os.environ.get("GROUPKIT_BENCH_HEARTBEAT_MS", "500"))
#: The Java client's default session and heartbeat (ms): the ``java`` idle rows'.
JAVA_TIMING = (45_000, 3_000)
POLL_S = 0.5
WAIT_S = 90.0
VALUE = b"v" * 100
# The consume rows' values: half random, so snappy compresses them about 2x, as it does
# typical payloads (VALUE alone compresses 20x and a whole topic arrives in one fetch).
_rng = random.Random(15)
VALUES = [_rng.randbytes(50) + b"v" * 50 for _ in range(1000)]
ROOT = Path(__file__).resolve().parent.parent


# --- the member (runs in a subprocess) -------------------------------------------------------


def _emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class _Owned:
    """The member's current partitions, reported to the parent on every change."""

    def __init__(self) -> None:
        self.partitions: set[int] = set()

    def add(self, partitions: list[int]) -> None:
        self.partitions |= set(partitions)
        _emit(owned=sorted(self.partitions), t=time.monotonic())

    def remove(self, partitions: list[int]) -> None:
        self.partitions -= set(partitions)
        _emit(owned=sorted(self.partitions), t=time.monotonic())


def _groupkit_member(bootstrap: str, group: str, topic: str, owned: _Owned
                     ) -> tuple[Callable[[], int], Callable[[], None]]:
    from groupkit.consumer import Consumer, ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, partitions):  # type: ignore[no-untyped-def]
            owned.add([tp.partition for tp in partitions])

        def on_partitions_revoked(self, partitions):  # type: ignore[no-untyped-def]
            owned.remove([tp.partition for tp in partitions])

        def on_partitions_lost(self, partitions):  # type: ignore[no-untyped-def]
            owned.remove([tp.partition for tp in partitions])

    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                        heartbeat_interval_ms=HEARTBEAT_MS, assignors=["range"])
    consumer.subscribe([topic], listener=Listener())
    return (lambda: len(consumer.poll(POLL_S))), consumer.close


def _kafka_python_member(bootstrap: str, group: str, topic: str, owned: _Owned
                         ) -> tuple[Callable[[], int], Callable[[], None]]:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            owned.add([tp.partition for tp in assigned])

        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            owned.remove([tp.partition for tp in revoked])

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                             partition_assignment_strategy=[RangePartitionAssignor])
    consumer.subscribe([topic], listener=Listener())

    def poll() -> int:
        batches = consumer.poll(timeout_ms=int(POLL_S * 1000))
        return sum(len(records) for records in batches.values())

    return poll, consumer.close


def _confluent_member(bootstrap: str, group: str, topic: str, owned: _Owned
                      ) -> tuple[Callable[[], int], Callable[[], None]]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                         "partition.assignment.strategy": "range"})
    consumer.subscribe([topic],
                       on_assign=lambda _c, tps: owned.add([tp.partition for tp in tps]),
                       on_revoke=lambda _c, tps: owned.remove([tp.partition for tp in tps]),
                       on_lost=lambda _c, tps: owned.remove([tp.partition for tp in tps]))

    def poll() -> int:
        messages = consumer.consume(num_messages=500, timeout=POLL_S)
        return sum(1 for m in messages if m.error() is None)

    return poll, consumer.close


def _aiokafka_member(bootstrap: str, group: str, topic: str, owned: _Owned
                     ) -> tuple[Callable[[], int], Callable[[], None]]:
    import asyncio

    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            owned.add([tp.partition for tp in assigned])

        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            owned.remove([tp.partition for tp in revoked])

    loop = asyncio.new_event_loop()

    async def start() -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            partition_assignment_strategy=(RangePartitionAssignor,))
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        return consumer

    consumer = loop.run_until_complete(start())

    def poll() -> int:
        batches = loop.run_until_complete(consumer.getmany(timeout_ms=int(POLL_S * 1000)))
        return sum(len(records) for records in batches.values())

    def close() -> None:
        loop.run_until_complete(consumer.stop())
        loop.close()

    return poll, close


MEMBERS = {"groupkit": _groupkit_member, "aiokafka": _aiokafka_member,
           "kafka-python": _kafka_python_member, "confluent-kafka": _confluent_member}

# The modules each client's member function imports. A member loads them before it reports
# "ready", so no row counts the interpreter importing a library (16 members importing at once
# on two cores took over a second, longer for the client with more to import).
CLIENT_MODULES = {"groupkit": ("groupkit.consumer",),
                  "aiokafka": ("aiokafka", "aiokafka.coordinator.assignors.range"),
                  "kafka-python": ("kafka", "kafka.coordinator.assignors.range"),
                  "confluent-kafka": ("confluent_kafka",)}


def member_main(client: str, bootstrap: str, group: str, topic: str, target: int) -> None:
    """Wait for "go" on stdin, join, poll until "leave" (or ``target`` records), report."""
    commands: queue.Queue[str] = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("leave")

    threading.Thread(target=read_stdin, daemon=True).start()
    for module in CLIENT_MODULES[client]:
        importlib.import_module(module)
    _emit(ready=True)
    if commands.get() != "go":
        return
    owned = _Owned()
    cpu = time.process_time()
    poll, close = MEMBERS[client](bootstrap, group, topic, owned)
    count, first, first_count = 0, 0.0, 0
    while commands.empty():
        got = poll()
        if got and not count:
            first, first_count = time.monotonic(), got
        count += got
        if target and count >= target:
            _emit(consumed=count, first=first, first_count=first_count, last=time.monotonic(),
                  cpu=time.process_time() - cpu, rss=peak_rss_mib())
            break
    close()
    _emit(left=True)


# --- the parent --------------------------------------------------------------------------------


class Member:
    """One member subprocess and the events it reported."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, target: int = 0,
                 timing: tuple[int, int] | None = None):
        # The member runs this same module from the project root, as the parent was started;
        # ``timing`` (session, heartbeat ms) overrides the run's for this member.
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if timing is not None:
            env["GROUPKIT_BENCH_SESSION_MS"], env["GROUPKIT_BENCH_HEARTBEAT_MS"] = map(str, timing)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.group", "member", client, bootstrap, group, topic,
             str(target)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, cwd=ROOT,
            env=env)
        self.events: queue.Queue[dict] = queue.Queue()
        self.owned: set[int] = set()
        self.changed = 0.0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.put(json.loads(line))
        self.events.put({"exited": True})

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def next_event(self, deadline: float) -> dict | None:
        try:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if "owned" in event:
            self.owned = set(event["owned"])
            self.changed = event["t"]
        if event.get("exited"):
            raise RuntimeError(f"member {self.proc.pid} exited with {self.proc.wait()}")
        return event

    def drain(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if "owned" in event:
                self.owned = set(event["owned"])
                self.changed = event["t"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("leave")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _covers(members: list[Member], partitions: int) -> bool:
    seen: list[int] = []
    for m in members:
        if not m.owned:
            return False
        seen.extend(m.owned)
    return sorted(seen) == list(range(partitions))


def wait_covered(members: list[Member], partitions: int, since: float) -> float:
    """Seconds from ``since`` to the last assignment change that made ``members`` cover all."""
    deadline = time.monotonic() + WAIT_S
    while True:
        for m in members:
            m.drain()
        if _covers(members, partitions):
            return max(m.changed for m in members) - since
        if time.monotonic() > deadline:
            raise RuntimeError(f"no stable assignment within {WAIT_S}s")
        members[0].next_event(min(deadline, time.monotonic() + 0.05))


def start_members(client: str, n: int, bootstrap: str, group: str, topic: str,
                  target: int = 0, timing: tuple[int, int] | None = None) -> list[Member]:
    """``n`` member subprocesses, imported and waiting for "go"."""
    members = [Member(client, bootstrap, group, topic, target, timing) for _ in range(n)]
    deadline = time.monotonic() + WAIT_S
    for m in members:
        while (event := m.next_event(deadline)) is not None and not event.get("ready"):
            pass
    return members


def go(members: list[Member]) -> float:
    """Tell every member to join now; returns when that was."""
    start = time.monotonic()
    for m in members:
        m.send("go")
    return start


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the
    parent that forked it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[
        name].result(30)


def produce(bootstrap: str, topic: str, n: int, codec: str = "none") -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 200000,
                         "compression.type": codec})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUES[i % len(VALUES)], partition=i % CONSUME_PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("could not produce the benchmark records")


def consume(client: str, bootstrap: str, group: str, topic: str, n: int
            ) -> dict[str, float | None]:
    """One member reading ``n`` records: its rate after its first poll with records (those
    records arrived at an unknown moment of that poll, so they are not counted; None if that
    poll had them all), the time from "go" to its first record, its CPU seconds and peak RSS."""
    (member,) = start_members(client, 1, bootstrap, group, topic, target=n)
    try:
        started = go([member])
        deadline = time.monotonic() + WAIT_S + n / 2000
        while (event := member.next_event(deadline)) is not None:
            if "consumed" in event:
                rest = event["consumed"] - event["first_count"]
                return {"rate": rest / (event["last"] - event["first"]) if rest > 0 else None,
                        "first": event["first"] - started, "cpu": event["cpu"],
                        "rss": event["rss"]}
        raise RuntimeError(f"{client} did not consume {n} records in time")
    finally:
        member.stop()


def run_client(client: str, bootstrap: str, args: argparse.Namespace,
               consume_topics: dict[str, str]) -> dict[str, float | None]:
    """Every selected row for one client, each on a topic and group of its own."""
    results: dict[str, float | None] = {}
    tag = f"{client}-{uuid.uuid4().hex[:6]}"
    sizes = list(args.members) if "join" in args.rows else []
    if ("leave" in args.rows or "kill" in args.rows) and 4 not in sizes:
        sizes.append(4)
    for n in sizes:
        topic = f"g-{tag}-{n}"
        make_topic(bootstrap, topic, GROUP_PARTITIONS)
        members = start_members(client, n, bootstrap, topic, topic)
        try:
            joined = wait_covered(members, GROUP_PARTITIONS, go(members))
            if "join" in args.rows:
                results[f"join {n}"] = joined
            if n == 4 and "leave" in args.rows:
                leaving, members = members[0], members[1:]
                start = time.monotonic()
                leaving.stop()
                results["leave"] = wait_covered(members, GROUP_PARTITIONS, start)
            if n == 4 and "kill" in args.rows:
                victim, members = members[0], members[1:]
                start = time.monotonic()
                victim.proc.send_signal(signal.SIGKILL)
                victim.proc.wait()
                results["kill"] = wait_covered(members, GROUP_PARTITIONS, start)
        finally:
            for m in members:
                m.stop()
    return results


# Per row: unit, and whether a higher figure is better (for the ratio's direction).
def _unit(name: str) -> tuple[str, bool]:
    if name.startswith("consume cpu"):
        return "s", False
    if name.startswith("consume rss"):
        return "MiB", False
    if name.startswith("consume"):
        return "rec/s", True
    if name.startswith("idle cpu"):
        return "%", False
    if name.startswith("idle rss"):
        return "MiB", False
    return "s", False


ORDER = ["join 1", "join 4", "join 16", "first", "leave", "kill", "consume none",
         "consume cpu none", "consume rss none", "consume snappy", "consume cpu snappy",
         "consume rss snappy", "idle cpu", "idle rss", "idle cpu java", "idle rss java"]


def rows(results: dict[str, dict[str, float | None]]) -> list[Row]:
    """The figures per client as table rows, in ORDER."""
    names = sorted(dict.fromkeys(row for r in results.values() for row in r),
                   key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    out = []
    for name in names:
        unit, higher = _unit(name)
        out.append(Row(name, unit, results.get("groupkit", {}).get(name),
                       {c: r.get(name) for c, r in results.items() if c != "groupkit"},
                       higher))
    return out


def measure(argv: list[str] | None = None) -> list[Row]:
    """Every selected row (see main's options) for every selected client."""
    args = _parser().parse_args(argv)
    from groupkit.testing import LocalBroker

    with LocalBroker() as broker:
        bootstrap = broker.bootstrap_servers
        consume_topics: dict[str, str] = {}
        if "consume" in args.rows:
            for codec in args.codecs:
                topic = consume_topics[codec] = f"consume-{codec}-{uuid.uuid4().hex[:6]}"
                make_topic(bootstrap, topic, CONSUME_PARTITIONS)
                produce(bootstrap, topic, args.records, codec)
        results = {c: run_client(c, bootstrap, args, consume_topics) for c in args.clients}
        if "idle" in args.rows:
            for client, figures in idle_rows(args.clients, bootstrap, args.idle_seconds).items():
                results[client].update(figures)
            if (SESSION_MS, HEARTBEAT_MS) != JAVA_TIMING:
                for client, figures in idle_rows(args.clients, bootstrap, args.idle_seconds,
                                                 JAVA_TIMING).items():
                    results[client].update(figures)
        for client, figures in consume_rows(args.clients, bootstrap, consume_topics,
                                            args.records, args.repeat).items():
            results[client].update(figures)
    return rows(results)


def idle_rows(clients: list[str], bootstrap: str, seconds: float,
              timing: tuple[int, int] | None = None) -> dict[str, dict[str, float | None]]:
    """The idle rows: one joined member per client, each on a topic of its own, all measured
    in the same window (a change of load on a shared machine falls on all of them). CPU is
    the sum of the member's threads' run time from schedstat (nanoseconds; the clock-tick
    figures of /proc/PID/stat move in 10 ms steps, a tenth of a minute's idle CPU). With
    ``timing`` (session, heartbeat ms) the members run with it, and the rows are the
    ``java`` ones."""
    members: dict[str, Member] = {}
    suffix = "" if timing is None else " java"
    try:
        for client in clients:
            topic = f"i-{client}-{uuid.uuid4().hex[:6]}"
            make_topic(bootstrap, topic, 1)
            members[client] = start_members(client, 1, bootstrap, topic, topic,
                                            timing=timing)[0]
        for member in members.values():
            wait_covered([member], 1, go([member]))
        before = {c: run_seconds(m.proc.pid) for c, m in members.items()}
        start = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - start
        return {c: {f"idle cpu{suffix}": 100 * (run_seconds(m.proc.pid) - before[c]) / wall,
                    f"idle rss{suffix}": rss_mib(m.proc.pid)} for c, m in members.items()}
    finally:
        for member in members.values():
            member.stop()


def consume_rows(clients: list[str], bootstrap: str, topics: dict[str, str], n: int,
                 repeat: int) -> dict[str, dict[str, float | None]]:
    """The consume rows (and ``first``) per client: ``repeat`` rounds, each running every
    client in turn, so a change of load on a shared machine falls on all of them; each figure
    is the best of its rounds (the highest rate, the least CPU, RSS and time to a record)."""
    best: dict[str, dict[str, float | None]] = {c: {} for c in clients}

    def keep(figures: dict[str, float | None], name: str, value: float | None) -> None:
        if value is None:
            figures.setdefault(name, None)
            return
        was = figures.get(name)
        higher = _unit(name)[1]
        if was is None or (value > was if higher else value < was):
            figures[name] = value

    for _ in range(repeat):
        for client in clients:
            for codec, topic in topics.items():
                group = f"c-{client}-{uuid.uuid4().hex[:6]}-{codec}"
                got = consume(client, bootstrap, group, topic, n)
                keep(best[client], f"consume {codec}", got["rate"])
                keep(best[client], f"consume cpu {codec}", got["cpu"])
                keep(best[client], f"consume rss {codec}", got["rss"])
                if codec == "none":
                    keep(best[client], "first", got["first"])
    return best


def _csv(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {', '.join(choices)}")
        return items
    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=_csv(CLIENTS), default=list(CLIENTS))
    parser.add_argument("--rows", type=_csv(ROWS), default=list(ROWS))
    parser.add_argument("--codecs", type=_csv(CODECS), default=list(CODECS),
                        help="how the consume rows' records are written")
    parser.add_argument("--members", type=lambda t: [int(x) for x in t.split(",")],
                        default=[1, 4, 16])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--java-timing", action="store_true",
                        help="session 45000 ms, heartbeat 3000 ms (the Java client's defaults)"
                             " for every member and row (the idle rows then run once)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the consume rows, clients in turn; best of them kept")
    return parser


def main(argv: list[str] | None = None) -> int:
    global SESSION_MS, HEARTBEAT_MS
    args = _parser().parse_args(argv)
    if args.java_timing:
        SESSION_MS, HEARTBEAT_MS = JAVA_TIMING
        os.environ["GROUPKIT_BENCH_SESSION_MS"] = str(SESSION_MS)
        os.environ["GROUPKIT_BENCH_HEARTBEAT_MS"] = str(HEARTBEAT_MS)
    print(f"groupkit bench/group.py: members={args.members} records={args.records:,}"
          f" idle={args.idle_seconds:g}s session={SESSION_MS}ms heartbeat={HEARTBEAT_MS}ms")
    print_rows(measure(argv))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "member":
        client, bootstrap, group, topic, target = sys.argv[2:7]
        member_main(client, bootstrap, group, topic, int(target))
    else:
        sys.exit(main())
