"""Producer throughput: groupkit against confluent-kafka, aiokafka and kafka-python.

Each client sends N records of 100 bytes (null keys, no headers) to its own 3-partition topic
and flushes; the rate is N over the time from the first send to the end of the flush. Three
settings, each with the same options for every client: acks=all uncompressed, acks=0
uncompressed, acks=all lz4; linger 5 ms, 1,000,000-byte batches (confluent-kafka's default
batch size).

The ``defaults`` row is what a new user's script pays: groupkit and confluent-kafka each at its
own defaults, in a fresh process (bench/produce_fresh.py) timed from before the client's import
to the end of the flush, sending 300,000 records of 100 bytes to partition ``i % 4`` of its own
4-partition topic; the rate is the records over that whole time. groupkit's modules are
compiled to bytecode first, as an installed wheel's are (bench/bytecode.py). Every 1,000th record's delivery is checked (acks=all). The acks=0 row is skewed
by the local broker, which answers acks=0 Produce requests (Kafka sends no answer): aiokafka's
connection fails on the unexpected answer (so it sits out), and groupkit closes the connection
as out of step and reconnects, as the Java client does on a correlation-id mismatch, so its
acks=0 figure here counts reconnects; librdkafka ignores the answer. With ``--repeat R`` the
clients take turns R times and each keeps its best run, which evens out the noise of a shared
machine.

    .venv/bin/python bench/produce.py [--records N] [--repeat R] [--settings all,0,lz4]
        [--clients groupkit,confluent-kafka,aiokafka,kafka-python] [--defaults-records N]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bytecode import compile_sources  # noqa: E402
from bench.table import Row, print_rows  # noqa: E402
from groupkit.admin import Admin  # noqa: E402
from groupkit.producer import Producer  # noqa: E402
from groupkit.testing import LocalBroker  # noqa: E402

VALUE = bytes(range(100))
PARTITIONS = 3
LINGER_MS = 5
BATCH_BYTES = 1_000_000
CHECK_EVERY = 1000
WAIT = 120.0
#: name -> (acks, compression)
SETTINGS = {"all": ("all", None), "0": (0, None), "lz4": ("all", "lz4")}
CLIENTS = ("groupkit", "confluent-kafka", "aiokafka", "kafka-python")
#: The defaults row: records per run, the partitions they go to, the clients it compares.
DEFAULTS_RECORDS = 300_000
DEFAULTS_PARTITIONS = 4
DEFAULTS_CLIENTS = ("groupkit", "confluent-kafka")
FRESH = Path(__file__).resolve().parent / "produce_fresh.py"

Run = Callable[[str, str, int, "str | int", "str | None"], float]


def with_groupkit(bootstrap: str, topic: str, n: int, acks: str | int,
                  compression: str | None) -> float:
    with Producer(bootstrap_servers=bootstrap, acks=acks, compression=compression,
                  linger_ms=LINGER_MS, batch_size=BATCH_BYTES) as producer:
        producer.partitions_for(topic)
        send = producer.send
        checked = []
        start = time.perf_counter()
        for i in range(n):
            future = send(topic, VALUE)
            if i % CHECK_EVERY == 0:
                checked.append(future)
        producer.flush(WAIT)
        done = time.perf_counter()
    for future in checked:
        future.result(0)
    return n / (done - start)


def with_kafka_python(bootstrap: str, topic: str, n: int, acks: str | int,
                      compression: str | None) -> float:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, compression_type=compression,
                             linger_ms=LINGER_MS, batch_size=BATCH_BYTES,
                             max_request_size=2 * BATCH_BYTES)
    try:
        producer.partitions_for(topic)
        send = producer.send
        checked = []
        start = time.perf_counter()
        for i in range(n):
            future = send(topic, VALUE)
            if i % CHECK_EVERY == 0:
                checked.append(future)
        producer.flush(WAIT)
        done = time.perf_counter()
        for future in checked:
            future.get(0)
    finally:
        producer.close()
    return n / (done - start)


def with_aiokafka(bootstrap: str, topic: str, n: int, acks: str | int,
                  compression: str | None) -> float:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks,
                                    compression_type=compression, linger_ms=LINGER_MS,
                                    max_batch_size=BATCH_BYTES, max_request_size=2 * BATCH_BYTES)
        await producer.start()
        try:
            await producer.partitions_for(topic)
            send = producer.send
            checked = []
            start = time.perf_counter()
            for i in range(n):
                future = await send(topic, VALUE)
                if i % CHECK_EVERY == 0:
                    checked.append(future)
            await producer.flush()
            done = time.perf_counter()
            for future in checked:
                await future
        finally:
            await producer.stop()
        return n / (done - start)

    return asyncio.run(run())


def with_confluent(bootstrap: str, topic: str, n: int, acks: str | int,
                   compression: str | None) -> float:
    from confluent_kafka import Producer as ConfluentProducer

    errors: list[object] = []
    delivered = [0]

    def check(err: object, _: object) -> None:
        delivered[0] += 1
        if err is not None:
            errors.append(err)

    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": acks,
                                  "compression.type": compression or "none",
                                  "linger.ms": LINGER_MS, "batch.size": BATCH_BYTES,
                                  "log_level": 0})
    producer.list_topics(topic, timeout=10)
    produce, poll = producer.produce, producer.poll
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                if i % CHECK_EVERY == 0:
                    produce(topic, VALUE, on_delivery=check)
                else:
                    produce(topic, VALUE)
                break
            except BufferError:
                poll(0.001)
    left = producer.flush(WAIT)
    done = time.perf_counter()
    if left or errors or delivered[0] != (n + CHECK_EVERY - 1) // CHECK_EVERY:
        raise SystemExit(f"confluent-kafka: {left} undelivered, errors {errors[:3]}")
    return n / (done - start)


RUNS: dict[str, Run] = {"groupkit": with_groupkit, "confluent-kafka": with_confluent,
                        "aiokafka": with_aiokafka, "kafka-python": with_kafka_python}


def fresh_run(client: str, bootstrap: str, topic: str, n: int) -> dict[str, float]:
    """One client at its defaults in a new process: seconds per phase and in all."""
    done = subprocess.run([sys.executable, str(FRESH), client, bootstrap, topic, str(n)],
                          capture_output=True, text=True, check=True, timeout=WAIT + 60)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure_defaults(n: int = DEFAULTS_RECORDS, repeat: int = 3,
                     clients: tuple[str, ...] = DEFAULTS_CLIENTS,
                     bootstrap: str | None = None) -> list[Row]:
    """The ``produce defaults`` row: records/s from before the import to the end of the flush,
    each client at its defaults in a fresh process, the clients taking turns ``repeat`` times;
    each keeps its median run. Prints each run's phases."""
    if bootstrap is None:
        with LocalBroker() as broker:
            return measure_defaults(n, repeat, clients, broker.bootstrap_servers)
    compile_sources()
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in clients}
    with Admin(bootstrap_servers=bootstrap) as admin:
        for round_ in range(repeat):
            topics = {c: f"bench-defaults-{c}-{round_}-{time.monotonic_ns()}" for c in clients}
            admin.create_topics(list(topics.values()), num_partitions=DEFAULTS_PARTITIONS)
            for client in clients:
                run = fresh_run(client, bootstrap, topics[client], n)
                runs[client].append(run)
                print("  defaults " + client + ": " + ", ".join(
                    f"{phase} {seconds:.3f} s" for phase, seconds in run.items()), flush=True)
    rates = {c: n / sorted(r["total"] for r in runs[c])[len(runs[c]) // 2] for c in clients}
    return [Row("produce defaults", "rec/s", rates.get("groupkit"),
                {c: rates[c] for c in clients if c != "groupkit"}, True)]


def measure(n: int = 1_000_000, repeat: int = 2, settings: tuple[str, ...] = tuple(SETTINGS),
            clients: tuple[str, ...] = CLIENTS, bootstrap: str | None = None) -> list[Row]:
    """One row per setting: records/s of groupkit and each peer (best of ``repeat``)."""
    if bootstrap is None:
        with LocalBroker() as broker:
            return measure(n, repeat, settings, clients, broker.bootstrap_servers)
    best: dict[tuple[str, str], float] = {}
    with Admin(bootstrap_servers=bootstrap) as admin:
        for round_ in range(repeat):
            for setting in settings:
                acks, compression = SETTINGS[setting]
                topics = {c: f"bench-produce-{c}-{setting}-{round_}-{time.monotonic_ns()}"
                          for c in clients}
                admin.create_topics(list(topics.values()), num_partitions=PARTITIONS)
                for client in clients:
                    if client == "aiokafka" and acks == 0:
                        continue
                    gc.collect()
                    rate = RUNS[client](bootstrap, topics[client], n, acks, compression)
                    best[client, setting] = max(best.get((client, setting), 0.0), rate)
    rows = []
    for setting in settings:
        acks, compression = SETTINGS[setting]
        name = f"produce acks={acks}" + (f" {compression}" if compression else "")
        rows.append(Row(name, "rec/s", best.get(("groupkit", setting)),
                        {c: best.get((c, setting)) for c in clients if c != "groupkit"}, True))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per client")
    parser.add_argument("--repeat", type=int, default=2,
                        help="rounds of all clients, interleaved; each client's best is kept")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help=f"comma-separated, from {', '.join(SETTINGS)}")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help=f"comma-separated, from {', '.join(CLIENTS)}")
    parser.add_argument("--defaults-records", type=int, default=DEFAULTS_RECORDS,
                        help="records per run of the defaults row (0: leave the row out)")
    args = parser.parse_args()
    settings = tuple(s for s in args.settings.split(",") if s)
    clients = tuple(c for c in args.clients.split(",") if c)
    print(f"produce: {args.records:,} records of {len(VALUE)} B per client, linger {LINGER_MS} ms,"
          f" {BATCH_BYTES:,}-byte batches, {PARTITIONS} partitions, best of {args.repeat}"
          " (Tansu, loopback)")
    with LocalBroker() as broker:
        rows = []
        if args.defaults_records:
            print(f"produce defaults: {args.defaults_records:,} records of {len(VALUE)} B, each"
                  f" client at its defaults in a fresh process, median of {args.repeat}")
            rows += measure_defaults(args.defaults_records, args.repeat,
                                     tuple(c for c in DEFAULTS_CLIENTS if c in clients),
                                     broker.bootstrap_servers)
        if settings:
            rows += measure(args.records, args.repeat, settings, clients,
                            broker.bootstrap_servers)
    print_rows(rows)


if __name__ == "__main__":
    main()
