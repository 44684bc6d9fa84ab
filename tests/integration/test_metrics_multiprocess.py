"""Two worker processes write metrics in multiprocess mode; this process serves them with a
MultiProcessCollector, as the worker pool's supervisor does, and a worker's death is marked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from groupkit.metrics import mark_process_dead, multiprocess_registry, serve
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_batched_topic
from tests.support.metrics_scrape import scrape, value
from tests.support.waits import eventually

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("metrics_worker.py")
WAIT = 45.0


class Spawned:
    """One worker process; its latest JSON line is what it says it holds and processed."""

    def __init__(self, bootstrap: str, group: str, topic: str, directory: str) -> None:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory,
               "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, str(WORKER), bootstrap, group, topic],
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.lock = threading.Lock()
        self.last: dict[str, Any] = {"held": [], "processed": 0}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.lock:
                self.last = json.loads(line)

    def said(self) -> dict[str, Any]:
        with self.lock:
            return dict(self.last)

    def end(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def test_two_worker_processes_are_served_as_one(kafka_broker: LocalBroker, unique_name,  # noqa: F811
                                                tmp_path: Path) -> None:
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {p: [50] for p in range(4)})
    directory = str(tmp_path)
    workers = [Spawned(bootstrap, group, topic, directory) for _ in range(2)]
    try:
        with serve(multiprocess_registry(directory), 0, host="127.0.0.1") as server:
            port = server.address[1]

            def both_work() -> None:
                said = [w.said() for w in workers]
                held = [set(s["held"]) for s in said]
                assert all(held) and held[0] | held[1] == {0, 1, 2, 3}
                assert not held[0] & held[1]
                # At least once: a rebalance while they start may hand a record over twice.
                processed = sum(s["processed"] for s in said)
                assert processed >= 200
                s = scrape(port)
                assert value(s, "groupkit_records_consumed_total", group=group,
                             topic=topic) == processed
                assert value(s, "groupkit_assigned_partitions", group=group, topic=topic) == 4
                assert value(s, "groupkit_member_state", group=group, state="STABLE") == 2
                for p in range(4):
                    assert value(s, "groupkit_consumer_lag_records", group=group, topic=topic,
                                 partition=str(p)) == 0

            eventually(both_work, WAIT, "both workers to consume, as one scrape shows")

            dead, alive = workers
            dead.end(signal.SIGKILL)
            mark_process_dead(dead.proc.pid, directory)

            consumed = value(scrape(port), "groupkit_records_consumed_total", group=group,
                             topic=topic)

            def dead_is_dropped() -> None:
                held = set(alive.said()["held"])
                s = scrape(port)
                # Counters keep what the dead worker counted; live gauges drop its share.
                assert value(s, "groupkit_records_consumed_total", group=group,
                             topic=topic) == consumed
                assert value(s, "groupkit_assigned_partitions", group=group,
                             topic=topic) == len(held)
                assert value(s, "groupkit_member_state", group=group, state="STABLE") in (0, 1)
                assert sum(v for (n, labels), v in s.items()
                           if n == "groupkit_member_state" and ("group", group) in labels) == 1

            eventually(dead_is_dropped, WAIT, "the dead worker's gauges to be dropped")
    finally:
        for worker in workers:
            worker.end(signal.SIGTERM)
    assert workers[1].proc.returncode == 0
