"""The worker-pool demo: a local broker, a stream of records, and ``groupkit run`` supervising
three worker processes with one metrics endpoint; one worker is killed and replaced, and every
record is still consumed.

The workers are real processes, so they report what they hold and consume through files in a
private directory (one JSON-lines file per process) that the demo reads.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.consumer import ConsumerRecord
from groupkit.demo import WORKER_SETTINGS, show_group
from groupkit.group_consumer import GroupConsumer
from groupkit.producer import Producer, RecordMetadata
from groupkit.testing import LocalBroker

__all__ = ["PoolDemoSummary", "PoolDemoWorker", "run_pool_demo"]

TOPIC = "demo-orders"
GROUP = "demo-pool-workers"
_DIR_ENV = "GROUPKIT_DEMO_DIR"


class PoolDemoWorker(GroupConsumer):
    """One worker process of the demo pool: prints its assignment changes, notes its records."""

    topics = [TOPIC]
    group_id = GROUP

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._file = (Path(os.environ[_DIR_ENV]) / f"{os.getpid()}.jsonl").open("a")
        self._held: set[int] = set()

    def _note(self, **line: Any) -> None:
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def _changed(self, verb: str, partitions: set[TopicPartition]) -> None:
        shown = ", ".join(str(tp.partition) for tp in sorted(partitions)) or "nothing"
        print(f"  worker pid {os.getpid():<7} {verb:<8} partitions {shown:<12} now owns"
              f" {sorted(self._held)}", flush=True)
        self._note(held=sorted(self._held))

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        self._note(records=[[r.partition, r.offset] for r in records])

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        self._held |= {tp.partition for tp in partitions}
        self._changed("assigned", partitions)

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        self._held -= {tp.partition for tp in partitions}
        self._changed("revoked", partitions)

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        self._held -= {tp.partition for tp in partitions}
        self._changed("lost", partitions)


@attrs.frozen
class PoolDemoSummary:
    """What the pool demo did; ``lost`` counts produced records nobody consumed."""

    produced: int
    consumed: int
    duplicates: int
    lost: int
    restarts: int
    pool_exit_status: int
    seconds: float


@attrs.define
class _Files:
    directory: Path

    def read(self) -> tuple[dict[int, set[int]], Counter[tuple[int, int]]]:
        """Each worker pid's latest holding, and how often each record was consumed."""
        held: dict[int, set[int]] = {}
        seen: Counter[tuple[int, int]] = Counter()
        for path in self.directory.glob("*.jsonl"):
            pid = int(path.stem)
            for text in path.read_text().splitlines():
                if not text.endswith("}"):
                    continue
                line = json.loads(text)
                if "held" in line:
                    held[pid] = set(line["held"])
                else:
                    seen.update((p, o) for p, o in line["records"])
        return held, seen


def _produce(producer: Producer, partitions: int, rate: float, stop: threading.Event,
             sent: list[Future[RecordMetadata]]) -> None:
    """Send ``rate`` records a second, in ten bursts a second, until ``stop`` is set."""
    burst, n = max(1, round(rate / 10)), 0
    while not stop.wait(0.1):
        for _ in range(burst):
            sent.append(producer.send(TOPIC, f"order {n}".encode(), partition=n % partitions))
            n += 1


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the demo waited {timeout:.0f}s for {what}")
        time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _scrape(port: int, names: tuple[str, ...]) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return [line for line in text.splitlines() if line.startswith(names)]


def run_pool_demo(processes: int = 3, partitions: int = 6, rate: float = 200.0,
                  out: Callable[[str], None] = print, wait: float = 60.0) -> PoolDemoSummary:
    """Run the pool demo; ``wait`` bounds each phase. Returns the summary it printed."""
    began = time.monotonic()
    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="groupkit-demo-") as tmp:
        bootstrap = broker.bootstrap_servers
        files = _Files(Path(tmp))
        out(f"broker: Tansu on {bootstrap}")
        with Admin(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([TOPIC], num_partitions=partitions)
        out(f"topic:  {TOPIC} with {partitions} partitions; producing {rate:g} records/s")
        port = _free_port()
        sets = [f"{k}={v!r}" for k, v in WORKER_SETTINGS.items()]
        command = [str(Path(sys.executable).with_name("groupkit")), "run",
                   "groupkit.demo_pool:PoolDemoWorker", "--processes", str(processes),
                   "--bootstrap-servers", bootstrap, "--metrics-port", str(port),
                   *[arg for s in sets for arg in ("--set", s)],
                   "--set", "metrics_host='127.0.0.1'", "--set", "backoff_initial_s=0.5"]
        out(f"\nstarting a pool of {processes} worker processes:\n  {' '.join(command[1:5])}"
            f" ...\n  metrics for all of them: curl http://127.0.0.1:{port}/metrics"
            f" (and /healthz)")
        stop_producing = threading.Event()
        sent: list[Future[RecordMetadata]] = []
        pool = subprocess.Popen(command, env={**os.environ, _DIR_ENV: tmp})
        try:
            with Producer(bootstrap_servers=bootstrap, linger_ms=5) as producer:
                feeder = threading.Thread(target=_produce, name="demo-producer", daemon=True,
                                          args=(producer, partitions, rate, stop_producing, sent))
                feeder.start()
                try:
                    def shared(exclude: int = -1) -> bool:
                        held = {pid: h for pid, h in files.read()[0].items()
                                if h and pid != exclude}
                        owned = sorted(p for h in held.values() for p in h)
                        return len(held) == processes and owned == list(range(partitions))

                    _wait(shared, wait, f"{processes} workers to share the topic")
                    victim = min(files.read()[0])
                    out(f"\nkilling worker pid {victim} with SIGKILL: the pool replaces it")
                    os.kill(victim, signal.SIGKILL)
                    _wait(lambda: shared(exclude=victim), wait,
                          "the replacement to take its share")
                finally:
                    stop_producing.set()
                    feeder.join(wait)
                producer.flush(wait)
            produced = {(m.partition, m.offset) for m in (f.result() for f in sent)}
            out(f"\nproduced {len(produced)} records; waiting for the workers to catch up")
            _wait(lambda: produced <= files.read()[1].keys(), wait,
                  "every produced record to be consumed")
            scraped = _scrape(port, ("groupkit_records_consumed_total",
                                     'groupkit_pool_worker_restarts_total{reason="crashed"}',
                                     'groupkit_pool_workers{state="running"}'))
            out("\none scrape of the pool's /metrics:\n  " + "\n  ".join(scraped))
            restarts = sum(int(float(line.rsplit(" ", 1)[1])) for line in scraped
                           if line.startswith("groupkit_pool_worker_restarts_total"))
            out("\nstopping the pool (SIGTERM): each worker commits and leaves")
            pool.send_signal(signal.SIGTERM)
            status = pool.wait(wait)
        finally:
            if pool.poll() is None:
                pool.kill()
                pool.wait(10)
        seen = files.read()[1]
        consumed = sum(seen.values())
        summary = PoolDemoSummary(
            produced=len(produced), consumed=consumed, duplicates=consumed - len(seen),
            lost=len(produced - seen.keys()), restarts=restarts, pool_exit_status=status,
            seconds=round(time.monotonic() - began, 1))
        out(f"\nsummary: {summary.produced} produced, {summary.consumed} consumed,"
            f" {summary.duplicates} duplicates (re-delivered after the kill), {summary.lost}"
            f" lost, {summary.restarts} worker restarted, pool exit status"
            f" {summary.pool_exit_status}, {summary.seconds}s")
        show_group(bootstrap, GROUP, out, wait)
    return summary

