"""The worker pool against the real broker: a real supervisor process (``groupkit run``),
real worker processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.producer import Producer
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
T = TypeVar("T")


def eventually(check: Callable[[], T], what: str, timeout: float = WAIT) -> T:
    """Run ``check`` until it stops raising AssertionError (bounded); return its result."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError as error:
            if time.monotonic() >= deadline:
                raise AssertionError(f"after {timeout} s, {what}: {error}") from error
        time.sleep(0.2)


class PoolProcess:
    """``groupkit run`` in a process of its own; its log goes to a file read by the test."""

    def __init__(self, tmp: Path, target: str, processes: int, bootstrap: str, group: str,
                 topic: str, *sets: str) -> None:
        self.dir = tmp / "records"
        self.dir.mkdir(exist_ok=True)
        self.log_path = tmp / "pool.log"
        args = [str(Path(sys.executable).with_name("groupkit")), "run", f"tests.support.pool_workers:{target}",
                "--processes", str(processes), "--bootstrap-servers", bootstrap,
                "--set", f"group_id={group}", "--set", f"topics=[{topic!r}]",
                "--set", "graceful_timeout_s=20", "--set", "backoff_initial_s=0.2"]
        for s in sets:
            args += ["--set", s]
        env = {**os.environ, "POOL_TEST_DIR": str(self.dir)}
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text()

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for path in self.dir.glob("*.jsonl"):
            for line in path.read_text().splitlines():
                if line.endswith("}"):
                    out.append(json.loads(line))
        return out

    def holders(self) -> dict[int, set[int]]:
        """Each worker pid's latest holding."""
        held: dict[int, set[int]] = {}
        for line in self.lines():
            if line["kind"] == "held":
                held[line["pid"]] = set(line["held"])
        return held

    def processed(self) -> list[tuple[int, int]]:
        return [(line["p"], line["o"]) for line in self.lines() if line["kind"] == "record"]

    def stop(self, timeout: float = WAIT) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """Kill the pool's whole session (supervisor and workers) if it is still there."""
        if self.proc.poll() is None:
            with _quiet():
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        with _quiet():
            os.killpg(self.proc.pid, signal.SIGKILL)  # workers left by a dead supervisor


class _quiet:  # noqa: N801 (a tiny context manager)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is ProcessLookupError or exc[0] is PermissionError


@pytest.fixture
def pools(tmp_path: Path) -> Iterator[Callable[..., PoolProcess]]:
    started: list[PoolProcess] = []

    def start(*args: Any) -> PoolProcess:
        pool = PoolProcess(tmp_path, *args)
        started.append(pool)
        return pool

    yield start
    for pool in started:
        pool.kill()


def make_topic(bootstrap: str, topic: str, partitions: int, per_partition: int
               ) -> dict[TopicPartition, int]:
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=partitions)
    return produce(bootstrap, topic, partitions, per_partition)


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int
            ) -> dict[TopicPartition, int]:
    ends: dict[TopicPartition, int] = {}
    with Producer(bootstrap_servers=bootstrap) as producer:
        futures = [producer.send(topic, b"x", partition=p)
                   for p in range(partitions) for _ in range(per_partition)]
        producer.flush(30)
        for future in futures:
            meta = future.result(30)
            tp = TopicPartition(topic, meta.partition)
            ends[tp] = max(ends.get(tp, 0), meta.offset + 1)
    return ends


def committed(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    with Admin(bootstrap_servers=bootstrap) as admin:
        return {tp: c.offset for tp, c in admin.list_group_offsets(group).items()}


def no_partition_twice_per_generation(pool: PoolProcess) -> None:
    # Everything a worker held at some point in a generation (an eager member revokes all at
    # the start of the next rebalance, still in the old generation).
    during: dict[tuple[int, int], set[int]] = defaultdict(set)
    for line in pool.lines():
        if line["kind"] == "held":
            during[(line["pid"], line["gen"])] |= set(line["held"])
    by_gen: dict[int, list[set[int]]] = defaultdict(list)
    for (_, gen), held in during.items():
        by_gen[gen].append(held)
    for gen, sets in by_gen.items():
        seen: set[int] = set()
        for held in sets:
            assert not seen & held, f"generation {gen}: partitions {seen & held} held twice"
            seen |= held


def test_a_killed_worker_is_replaced_and_every_record_processed(
        kafka_broker: LocalBroker, unique_name, pools, tmp_path: Path) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_topic(bootstrap, topic, 6, 40)
    pool = pools("RecordingWorker", 3, bootstrap, group, topic)

    def three_share_six() -> dict[int, set[int]]:
        held = {pid: h for pid, h in pool.holders().items() if h}
        assert len(held) == 3 and set().union(*held.values()) == set(range(6)), held
        return held

    held = eventually(three_share_six, "three workers to share six partitions")
    victim = next(iter(held))
    os.kill(victim, signal.SIGKILL)
    produce(bootstrap, topic, 6, 10)
    ends = {tp: o + 10 for tp, o in ends.items()}

    def replaced_and_all_done() -> None:
        live = {pid: h for pid, h in pool.holders().items() if h and pid != victim}
        assert len(live) == 3, live
        assert set().union(*live.values()) == set(range(6))
        done = set(pool.processed())
        assert all((tp.partition, o) in done for tp, end in ends.items() for o in range(end))

    eventually(replaced_and_all_done, "a replacement and every record processed")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert f"(pid {victim}) was killed by SIGKILL (crashed); restarting it" in log
    no_partition_twice_per_generation(pool)
    assert committed(bootstrap, group) == ends


def test_sigterm_commits_to_the_log_end_with_no_duplicates(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=4)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic)
    eventually(lambda: _assert(len([h for h in pool.holders().values() if h]) == 2),
               "two workers to hold partitions")
    # Produced once the group is settled: no rebalance can hand a record over twice.
    ends = produce(bootstrap, topic, 4, 50)
    eventually(lambda: _assert(len(pool.processed()) >= 200), "200 records processed")
    started = time.monotonic()
    assert pool.stop() == 0, pool.log()
    assert time.monotonic() - started < 20
    processed = pool.processed()
    assert len(processed) == len(set(processed)) == 200
    assert committed(bootstrap, group) == ends


def test_a_worker_that_cannot_start_stops_the_pool(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    pool = pools("FailsAtStart", 2, kafka_broker.bootstrap_servers, unique_name("g"), "t")
    status = pool.proc.wait(WAIT)
    log = pool.log()
    assert status != 0, log
    assert "RuntimeError: FailsAtStart: the database this worker needs is unreachable" in log
    assert "stopping the pool" in log


def test_a_worker_stuck_holding_the_gil_is_replaced(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_topic(bootstrap, topic, 2, 20)
    pool = pools("HangOnceWorker", 1, bootstrap, group, topic,
                 "max_poll_interval_ms=6000", "liveness_grace_s=1")

    def all_done() -> None:
        done = set(pool.processed())
        assert all((tp.partition, o) in done for tp, end in ends.items() for o in range(end))

    eventually(all_done, "the hung worker to be replaced and the records processed")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert "has not polled for" in log and "(unresponsive); restarting it" in log, log


def _assert(condition: bool) -> None:
    assert condition


def test_sigttin_and_sigttou_move_only_the_partitions_that_must_move(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=6)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic, "assignors=['cooperative-sticky']")

    def shared_by(n: int) -> dict[int, set[int]]:
        held = {pid: h for pid, h in pool.holders().items() if h}
        assert len(held) == n and set().union(*held.values()) == set(range(6)), held
        assert sum(len(h) for h in held.values()) == 6, held
        return held

    before = eventually(lambda: shared_by(2), "two workers to share six partitions")
    pool.proc.send_signal(signal.SIGTTIN)
    during = eventually(lambda: shared_by(3), "a third worker to take its share")
    added = (set(during) - set(before)).pop()
    assert len(during[added]) == 2
    for pid in before:  # each kept two of its three: only what the new worker needed moved
        assert during[pid] <= before[pid] and len(during[pid]) == 2
    pool.proc.send_signal(signal.SIGTTOU)
    after = eventually(lambda: shared_by(2), "the added worker to be removed")
    assert set(after) == set(before)
    for pid in before:
        assert after[pid] >= during[pid]
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert "SIGTTIN: adding worker 2" in log and "SIGTTOU: removing worker 2" in log
    assert "slot removed" in log


def test_a_static_slot_replaced_within_the_session_keeps_the_generation(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=4)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic, f"group_instance_id='{group}'")

    def settled() -> dict[int, dict[str, Any]]:
        last = {line["pid"]: line for line in pool.lines() if line["kind"] == "held"}
        assert len(last) == 2 and all(line["held"] for line in last.values()), last
        assert len({line["gen"] for line in last.values()}) == 1, last
        return last

    before = eventually(settled, "two static members to share the partitions")
    victim, survivor = before
    os.kill(victim, signal.SIGKILL)

    def back() -> dict[str, Any]:
        last = {line["pid"]: line for line in pool.lines() if line["kind"] == "held"}
        new = [line for pid, line in last.items() if pid not in before and line["held"]]
        assert new, last
        return new[0]

    replacement = eventually(back, "the slot to come back")
    assert replacement["gen"] == before[victim]["gen"]
    assert set(replacement["held"]) == set(before[victim]["held"])
    survivor_lines = [line for line in pool.lines() if line["pid"] == survivor
                      and line["kind"] == "held"]
    assert survivor_lines[-1] == before[survivor]  # the other member saw no rebalance
    assert pool.stop() == 0, pool.log()


def test_recycling_and_a_rolling_restart_replace_every_worker(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_topic(bootstrap, topic, 4, 25)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic, "max_records_per_worker=30")

    def all_done() -> None:
        done = set(pool.processed())
        assert all((tp.partition, o) in done for tp, end in ends.items() for o in range(end))
        assert "(recycled); restarting it" in pool.log()

    eventually(all_done, "every record processed by recycled workers")
    pool.proc.send_signal(signal.SIGHUP)
    eventually(lambda: _assert("rolling restart: worker 1 replaced" in pool.log()),
               "both workers to be replaced one at a time")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert log.index("rolling restart: worker 0 replaced") < log.index(
        "rolling restart: worker 1 replaced")
    assert committed(bootstrap, group) == ends


def test_a_second_sigint_stops_at_once(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_topic(bootstrap, topic, 1, 1)
    pool = pools("SlowWorker", 1, bootstrap, group, topic)
    eventually(lambda: _assert(any(line["kind"] == "started" for line in pool.lines())),
               "the worker to start on its record")
    pool.proc.send_signal(signal.SIGINT)
    eventually(lambda: _assert("SIGINT: stopping the workers" in pool.log()),
               "the first SIGINT to begin a graceful stop")
    pool.proc.send_signal(signal.SIGINT)
    assert pool.proc.wait(15) == 130, pool.log()
    assert "second SIGINT: killing the workers now" in pool.log()
    assert not pool.processed()


def test_a_crash_loop_stops_the_pool_with_the_last_traceback(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_topic(bootstrap, topic, 1, 3)
    pool = pools("CrashesOnRecords", 1, bootstrap, group, topic, "crash_loop_count=2")
    status = pool.proc.wait(WAIT)
    log = pool.log()
    assert status == 1, log
    assert "Crash loop: 2 worker failures within 60 s; stopping the pool" in log
    assert "RuntimeError: CrashesOnRecords cannot handle offset 0" in log.split("Crash loop")[1]


def test_workers_stop_when_their_supervisor_is_killed(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_topic(bootstrap, topic, 2, 5)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic)
    held = eventually(lambda: _at_least(2, {p for p, h in pool.holders().items() if h}),
                      "two workers to hold partitions")
    pool.proc.kill()
    pool.proc.wait(10)

    def gone() -> None:
        for pid in held:
            assert _state(pid) in ("gone", "Z"), (pid, _state(pid))

    eventually(gone, "the orphaned workers to stop")
    assert pool.log().count("the pool's supervisor is gone: stopping") == 2


def _at_least(n: int, pids: set[int]) -> set[int]:
    assert len(pids) >= n, pids
    return pids


def _state(pid: int) -> str:
    """A process's state letter from /proc (Z: exited, not reaped), or "gone"."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return "gone"
    return next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))


def test_what_outlives_the_graceful_timeout_is_killed(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_topic(bootstrap, topic, 1, 1)
    pool = pools("SlowWorker", 1, bootstrap, group, topic, "graceful_timeout_s=2")
    eventually(lambda: _assert(any(line["kind"] == "started" for line in pool.lines())),
               "the worker to start on its record")
    started = time.monotonic()
    assert pool.stop(timeout=30) == 0, pool.log()
    assert time.monotonic() - started < 15
    assert "did not stop within graceful_timeout_s 2.0: killing it" in pool.log()
