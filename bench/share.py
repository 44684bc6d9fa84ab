"""Share groups (KIP-932): records accepted per second by groupkit's ShareConsumer against
confluent-kafka's, on confluent-kafka's mock cluster, same members and records, same run.

For each client, ``--members`` member processes of a new share group (each this module with
``member`` as first argument) join on an empty topic and poll until the group has settled (the
mock's share heartbeat is set to 0.5 s through librdkafka's C API; two intervals after the
last join); they stop polling, the records are produced (not timed; in record sets of 500, the
same in every run), and on "go" the members poll at their defaults in implicit acknowledgement
mode (each poll accepts the records of the one before) and report how many records they have
had. Rows:

- ``share accept``: records per second, from "go" to the moment the members together had them
  all (the last poll's records are accepted by the commit that follows, not timed);
- ``share accept CPU``: CPU seconds of the member processes (every thread) over that window;
  lower is better.

The mock gives each partition to one member, so the members split the topic's partitions. The
rows come for two topics, of 8 and of 64 partitions (``--partitions``): for every partition of
a member's session, the mock answers each ShareFetch by walking every unconsumed offset of the
partition against its list of records in flight, so its work per record handed out grows with
the records waiting in each partition (25,000 at the start with 8 partitions, 3,125 with 64;
docs/test-brokers.md). Both rows are the mock's pace as much as the clients'.

groupkit runs twice: at its defaults (Java's ``batch_optimized`` mode, a ShareFetch to every
leader at once) and in the ``record_limit`` mode (a ShareFetch to one leader at a time, as
confluent-kafka's share consumer always fetches; rows marked ``record_limit``). On the mock
that pattern sets its pace for the whole run: a partition's first acquisition made before any
acknowledgement lays the partition's list of records in flight out sparsely, and the mock walks
such a list about half as slow again (docs/test-brokers.md).

The mock's pace and the machine's speed drift from run to run by a tenth or more, so each
client runs ``--rounds`` times, each run on a mock cluster of its own, the clients taking turns
(the first of them alternating), and the rows give each client's median; every run's figures
go to stderr.

    .venv/bin/python -m bench.share [--records 200000] [--members 2] [--rounds 3]
        [--partitions 8,64] [--clients groupkit,groupkit-record-limit,confluent-kafka]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.proc import run_seconds  # noqa: E402
from bench.table import Row, print_rows  # noqa: E402

#: groupkit's members in the record_limit mode: a ShareFetch to one leader at a time, as
#: confluent-kafka's share consumer always fetches (one selected broker).
LIMITED = "groupkit-record-limit"
CLIENTS = ("groupkit", LIMITED, "confluent-kafka")
#: The topics' partition counts, a pair of rows each.
PARTITION_COUNTS = (8, 64)
VALUE = b"x" * 100
WAIT_S = 180.0
HEARTBEAT_MS = 500
#: Records in each record set produced: the mock's work for a share fetch, and a client's for
#: its answer, grow with the size of the record sets the acquired records sit in, so every run
#: gets the same ones (left to linger.ms they were 2 to 6,000 records, differing run to run).
BATCH = 500
PRODUCER = {"batch.num.messages": BATCH, "linger.ms": 1000}


def _emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def member(client: str, bootstrap: str, group: str, topic: str) -> None:
    """One share member: join and poll until "pause", then wait for "go", consume and report
    counts until "stop"."""
    if client in ("groupkit", LIMITED):
        from groupkit import ShareConsumer

        mode = "record_limit" if client == LIMITED else "batch_optimized"
        if client == LIMITED:
            # The mock speaks ShareFetch v1, which cannot carry the mode: the warning that says
            # so, once for each leader, is expected here.
            logging.getLogger("groupkit.runtime.share_fetcher").setLevel(logging.ERROR)
        consumer: Any = ShareConsumer(bootstrap_servers=bootstrap, group_id=group,
                                      share_acquire_mode=mode)

        def poll() -> int:
            return len(consumer.poll(0.2))
    else:
        import confluent_kafka

        consumer = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap,
                                                  "group.id": group})

        def poll() -> int:
            return sum(1 for m in consumer.poll(0.2) if m.error() is None)
    said: dict[str, threading.Event] = {w: threading.Event() for w in ("pause", "go", "stop")}

    def listen() -> None:
        for line in sys.stdin:
            if line.strip() in said:
                said[line.strip()].set()

    threading.Thread(target=listen, daemon=True).start()
    consumer.subscribe([topic])
    while not said["pause"].is_set():
        poll()
    _emit(kind="ready")
    said["go"].wait()
    count = 0
    while not said["stop"].is_set():
        got = poll()
        if got:
            count += got
            _emit(kind="count", n=count, t=time.monotonic())
    consumer.commit_sync(30)
    consumer.close()
    _emit(kind="done", n=count)


class _Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.share", "member", client, bootstrap, group, topic],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.count = 0
        self.first: float | None = None
        self.lines: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self.changed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            self.lines.append(event)
            if event["kind"] == "ready":
                self.ready.set()
            elif event["kind"] == "count":
                if self.first is None:
                    self.first = event["t"]
                self.count = event["n"]
            self.changed.set()

    def tell(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()


def _produce(producer: Any, topic: str, records: int, partitions: int) -> None:
    """``records`` records round-robin over ``partitions`` partitions, in batches of ``BATCH``
    records each (the producer holds a batch until it is full or flushed), so every run reads the
    same record sets whatever the machine's pace."""
    sent = 0
    while sent < records:
        chunk = min(records - sent, BATCH * partitions)
        for i in range(sent, sent + chunk):
            producer.produce(topic, value=VALUE, partition=(i // BATCH) % partitions)
        if producer.flush(120):
            raise RuntimeError("the mock cluster did not take every record")
        sent += chunk


def _run(mock: Any, client: str, records: int, members: int,
         partitions: int) -> tuple[float, float]:
    group = topic = f"bench-share-{client}"
    mock.create_topic(topic, partitions)
    running = [_Member(client, mock.bootstrap_servers, group, topic) for _ in range(members)]
    try:
        deadline = time.monotonic() + WAIT_S
        while len(mock.share_members(group)) < members:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {client} members did not join")
            time.sleep(0.05)
        # Every member hears of the last join at its next heartbeat: two intervals settle it.
        time.sleep(2 * HEARTBEAT_MS / 1000)
        for m in running:
            m.tell("pause")
        for m in running:
            if not m.ready.wait(WAIT_S):
                raise RuntimeError(f"a {client} member did not pause")
        _produce(mock.warm_producer(), topic, records, partitions)
        cpu = {m.proc.pid: run_seconds(m.proc.pid) for m in running}
        started = time.monotonic()
        for m in running:
            m.tell("go")
        while sum(m.count for m in running) < records:
            if time.monotonic() > started + WAIT_S:
                raise RuntimeError(f"{client}: {sum(m.count for m in running)} of {records}"
                                   " records in time")
            time.sleep(0.005)
        done = time.monotonic()
        spent = sum(run_seconds(m.proc.pid) - cpu[m.proc.pid] for m in running)

        for m in running:
            m.tell("stop")
        for m in running:
            m.proc.wait(60)
        got = sum(m.count for m in running)
        if got != records:
            raise RuntimeError(f"{client}: {got} records delivered, {records} produced")
        return records / (done - started), spent
    finally:
        for m in running:
            if m.proc.poll() is None:
                m.proc.kill()


def measure(records: int = 200_000, members: int = 2,
            clients: tuple[str, ...] = CLIENTS, rounds: int = 3,
            partition_counts: tuple[int, ...] = PARTITION_COUNTS) -> list[Row]:
    """The share rows, for each partition count: each client's median accepted records per
    second and CPU seconds over ``rounds`` turns."""
    rows: list[Row] = []
    for partitions in partition_counts:
        rows += _measure(records, members, clients, rounds, partitions)
    return rows


def _measure(records: int, members: int, clients: tuple[str, ...], rounds: int,
             partitions: int) -> list[Row]:
    from tests.support.mock_cluster import MockCluster

    runs: dict[str, list[tuple[float, float]]] = {client: [] for client in clients}
    for turn in range(rounds):
        order = clients if turn % 2 == 0 else clients[::-1]
        for client in order:
            # A mock of its own for each run: the mock slows as it holds more records and
            # groups, which would favour whichever client runs first.
            with MockCluster(share_heartbeat_interval_ms=HEARTBEAT_MS) as mock:
                mock.warm_producer(**PRODUCER)
                rate, cpu = _run(mock, client, records, members, partitions)
            runs[client].append((rate, cpu))
            sys.stderr.write(f"share {partitions} partitions, round {turn + 1} {client}:"
                             f" {rate:,.0f} records/s, {cpu:.2f} CPU s\n")
    results = {client: (statistics.median(r for r, _ in got),
                        statistics.median(c for _, c in got)) for client, got in runs.items()}
    peers = [c for c in clients if not c.startswith("groupkit")]
    shape = f"{members} members, {partitions} partitions"
    rows: list[Row] = []
    for ours, mode in (("groupkit", ""), (LIMITED, ", record_limit")):
        if ours in results:
            rate, cpu = results[ours]
            rows += [
                Row(f"share accept{mode} ({shape})", "records/s", rate,
                    {p: results[p][0] for p in peers}),
                Row(f"share accept CPU{mode} ({shape})", "CPU s", cpu,
                    {p: results[p][1] for p in peers}, higher_is_better=False),
            ]
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "member":
        member(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", default=",".join(map(str, PARTITION_COUNTS)))
    parser.add_argument("--clients", default=",".join(CLIENTS))
    args = parser.parse_args()
    print_rows(measure(args.records, args.members, tuple(args.clients.split(",")),
                       args.rounds, tuple(int(n) for n in args.partitions.split(","))))


if __name__ == "__main__":
    main()
