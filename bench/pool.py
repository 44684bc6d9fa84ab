"""Worker-pool scaling: a CPU-bound ``process`` (about 200 us of pure Python per record) run
by ``groupkit run --processes W`` for W = 1, 2 and 4, in the same run, alternating.

For each W: a fresh topic of P partitions, the pool started and waited for until its W members
share every partition (so no join or rebalance is timed), then N records produced with
confluent-kafka (much faster than the workers consume them) and the time from the first
record produced to the last record processed measured. Records/s = N / that time. The best
of ``--repeat`` runs per W is kept, and the ratio to W = 1 is printed.

    .venv/bin/python -m bench.pool [--records N] [--partitions P] [--repeat R] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.group import VALUE, make_topic
from bench.pool_worker import spin

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 200e-6


def calibrate() -> int:
    """Loop steps of ``spin`` that take about 200 us here (best of several timings)."""
    steps = 1000
    best = min(_time(steps) for _ in range(20))
    return max(1, int(steps * TARGET_S / best))


def _time(steps: int) -> float:
    started = time.perf_counter()
    spin(steps)
    return time.perf_counter() - started


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 200000})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("could not produce the benchmark records")


def _progress(directory: Path) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for path in directory.glob("*.jsonl"):
        lines = path.read_text().splitlines()
        if lines and lines[-1].endswith("}"):
            last[path.name] = json.loads(lines[-1])
    return last


def one_run(bootstrap: str, workers: int, n: int, partitions: int, steps: int) -> float:
    """Records/s of a pool of ``workers`` over ``n`` records."""
    topic, group = f"pool-{uuid.uuid4().hex[:8]}", f"pool-{uuid.uuid4().hex[:8]}"
    make_topic(bootstrap, topic, partitions)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        env = {**os.environ, "BENCH_POOL_DIR": tmp, "BENCH_POOL_SPIN": str(steps)}
        command = [str(Path(sys.executable).with_name("groupkit")), "run",
                   "bench.pool_worker:Spinner", "--processes", str(workers),
                   "--bootstrap-servers", bootstrap, "--log-level", "WARNING",
                   "--set", f"group_id={group!r}", "--set", f"topics=[{topic!r}]",
                   "--set", "backoff_initial_s=0.5"]
        pool = subprocess.Popen(command, cwd=ROOT, env=env)
        try:
            deadline = time.monotonic() + 120
            while True:
                held = [set(p["held"]) for p in _progress(directory).values()
                        if p["held"]]
                if len(held) == workers and set().union(*held) == set(range(partitions)):
                    break
                if time.monotonic() > deadline or pool.poll() is not None:
                    raise RuntimeError(f"the pool of {workers} did not settle")
                time.sleep(0.2)
            started = time.time()
            produce(bootstrap, topic, n, partitions)
            deadline = time.monotonic() + 60 + n * TARGET_S * 4
            while True:
                progress = _progress(directory).values()
                if sum(int(p["count"]) for p in progress) >= n:
                    return n / (max(float(p["t"]) for p in progress) - started)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the pool of {workers} did not process {n} records")
                time.sleep(0.05)
        finally:
            pool.send_signal(signal.SIGTERM)
            try:
                pool.wait(40)
            except subprocess.TimeoutExpired:
                pool.kill()
                pool.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    from groupkit.testing import LocalBroker

    steps = calibrate()
    print(f"spin: {steps} steps ~ {_time(steps) * 1e6:.0f} us per record; {args.records} records,"
          f" {args.partitions} partitions, {os.cpu_count()} CPUs")
    best: dict[int, float] = {}
    with LocalBroker() as broker:
        for _ in range(args.repeat):
            for w in counts:
                rate = one_run(broker.bootstrap_servers, w, args.records, args.partitions, steps)
                print(f"  {w} worker(s): {rate:,.0f} records/s", flush=True)
                best[w] = max(best.get(w, 0.0), rate)
    base = best[counts[0]]
    print("| workers | records/s (best) | ratio |\n| --- | --- | --- |")
    for w in counts:
        print(f"| {w} | {best[w]:,.0f} | {best[w] / base:.2f}x |")


if __name__ == "__main__":
    main()
