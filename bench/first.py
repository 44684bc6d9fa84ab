"""First record from a fresh process: groupkit against aiokafka, confluent-kafka, kafka-python.

Each client, in a new process of its own (bench/first_fresh.py) and a new group, subscribes to
a 4-partition topic holding 300,000 records of 100 bytes and polls until its first record; the
figure is the seconds from before the client's import to that record, so it counts importing
and building the consumer as well as finding the coordinator, joining, syncing, finding the
start offsets and the first fetch. Every client has session 6000 ms, heartbeat 500 ms, earliest
reset, no auto-commit, and its defaults otherwise. On Tansu a new group's JoinGroup is held for
about half the session (3 s), the same for every client, so the differences are the clients'
own. groupkit's modules are compiled to bytecode first, as an installed wheel's are
(bench/bytecode.py). The clients take turns ``--repeat`` times; each keeps its median. (``bench/group.py``'s
``first`` row times the same path from "go", after the imports.)

    .venv/bin/python -m bench.first [--repeat R] [--clients groupkit,aiokafka,...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bytecode import compile_sources  # noqa: E402
from bench.table import Row, print_rows  # noqa: E402
from groupkit.testing import LocalBroker  # noqa: E402

CLIENTS = ("groupkit", "aiokafka", "confluent-kafka", "kafka-python")
PARTITIONS = 4
RECORDS = 300_000
VALUE = bytes(range(100))
FRESH = Path(__file__).resolve().parent / "first_fresh.py"


def fill(bootstrap: str, topic: str, n: int) -> None:
    """Create ``topic`` and write ``n`` records to it (confluent-kafka, for speed; unmeasured)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[
        topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("could not write the benchmark records")


def fresh_run(client: str, bootstrap: str, topic: str) -> dict[str, float]:
    """One client in a new process and a new group: seconds to import, build, first record."""
    group = f"first-{client}-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, str(FRESH), client, bootstrap, topic, group],
                          capture_output=True, text=True, check=True, timeout=120)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(repeat: int = 3, clients: tuple[str, ...] = CLIENTS,
            bootstrap: str | None = None) -> list[Row]:
    """The ``first fresh`` row: each client's median seconds to its first record."""
    if bootstrap is None:
        with LocalBroker() as broker:
            return measure(repeat, clients, broker.bootstrap_servers)
    topic = f"first-{uuid.uuid4().hex[:8]}"
    fill(bootstrap, topic, RECORDS)
    compile_sources()
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in clients}
    for _ in range(repeat):
        for client in clients:
            run = fresh_run(client, bootstrap, topic)
            runs[client].append(run)
            print(f"  first fresh {client}: " + ", ".join(
                f"{phase} {seconds:.3f} s" for phase, seconds in run.items()), flush=True)
    median = {c: sorted(r["first"] for r in runs[c])[len(runs[c]) // 2] for c in clients}
    return [Row("first fresh", "s", median.get("groupkit"),
                {c: median[c] for c in clients if c != "groupkit"}, False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="turns of every client")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help=f"comma-separated, from {', '.join(CLIENTS)}")
    args = parser.parse_args()
    clients = tuple(c for c in args.clients.split(",") if c)
    print(f"first fresh: {RECORDS:,} records of {len(VALUE)} B on {PARTITIONS} partitions, each"
          f" client in a new process and group, median of {args.repeat}")
    print_rows(measure(args.repeat, clients))


if __name__ == "__main__":
    main()
