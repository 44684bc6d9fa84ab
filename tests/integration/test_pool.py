"""The worker pool against the real broker: a real supervisor process (``groupkit run``),
real worker processes, real signals."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support import waits
from tests.support.broker_data import committed, create_topic, make_batched_topic, write_batches
from tests.support.pool_process import WAIT, pools  # noqa: F401
from tests.support.worker_log import held_twice

pytestmark = pytest.mark.broker
T = TypeVar("T")


def eventually(check: Callable[[], T], what: str, timeout: float = WAIT) -> T:
    """The shared bounded wait, polling every 0.2 s, a minute unless told."""
    return waits.eventually(check, timeout, what, step=0.2)


def test_a_killed_worker_is_replaced_and_every_record_processed(
        kafka_broker: LocalBroker, unique_name, pools, tmp_path: Path) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_batched_topic(bootstrap, topic, {p: [40] for p in range(6)})
    pool = pools("RecordingWorker", 3, bootstrap, group, topic)

    def three_share_six() -> dict[int, set[int]]:
        held = {pid: h for pid, h in pool.holders().items() if h}
        assert len(held) == 3 and set().union(*held.values()) == set(range(6)), held
        return held

    held = eventually(three_share_six, "three workers to share six partitions")
    victim = next(iter(held))
    os.kill(victim, signal.SIGKILL)
    write_batches(bootstrap, topic, {p: [10] for p in range(6)})
    ends = {p: o + 10 for p, o in ends.items()}

    def replaced_and_all_done() -> None:
        live = {pid: h for pid, h in pool.holders().items() if h and pid != victim}
        assert len(live) == 3, live
        assert set().union(*live.values()) == set(range(6))
        done = set(pool.processed())
        assert all((p, o) in done for p, end in ends.items() for o in range(end))

    eventually(replaced_and_all_done, "a replacement and every record processed")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert f"(pid {victim}) was killed by SIGKILL (crashed); restarting it" in log
    assert held_twice(pool.lines()) == [], "a partition was held twice in one generation"
    assert committed(bootstrap, group, topic, len(ends)) == ends


def test_sigterm_commits_to_the_log_end_with_no_duplicates(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 4)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic)
    eventually(lambda: _assert(len([h for h in pool.holders().values() if h]) == 2),
               "two workers to hold partitions")
    # Produced once the group is settled: no rebalance can hand a record over twice.
    ends = write_batches(bootstrap, topic, {p: [50] for p in range(4)})
    eventually(lambda: _assert(len(pool.processed()) >= 200), "200 records processed")
    started = time.monotonic()
    assert pool.stop() == 0, pool.log()
    assert time.monotonic() - started < 20
    processed = pool.processed()
    assert len(processed) == len(set(processed)) == 200
    assert committed(bootstrap, group, topic, len(ends)) == ends


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
    ends = make_batched_topic(bootstrap, topic, {p: [20] for p in range(2)})
    pool = pools("HangOnceWorker", 1, bootstrap, group, topic,
                 "max_poll_interval_ms=6000", "liveness_grace_s=1")

    def all_done() -> None:
        done = set(pool.processed())
        assert all((p, o) in done for p, end in ends.items() for o in range(end))

    eventually(all_done, "the hung worker to be replaced and the records processed")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert "has not polled for" in log and "(unresponsive); restarting it" in log, log


def _assert(condition: bool) -> None:
    assert condition


def test_sigttin_and_sigttou_move_only_the_partitions_that_must_move(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 6)
    pool = pools("RecordingWorker", 2, bootstrap, group, topic, "assignors=['cooperative-sticky']")

    def shared_by(n: int) -> dict[int, set[int]]:
        # Waits for the balanced end state: a cooperative rebalance passes through states that
        # also cover every partition once (a worker's report of its revoke may come late).
        held = {pid: h for pid, h in pool.holders().items() if h}
        assert len(held) == n and set().union(*held.values()) == set(range(6)), held
        assert sorted(len(h) for h in held.values()) == [6 // n] * n, held
        return held

    before = eventually(lambda: shared_by(2), "two workers to share six partitions")
    pool.proc.send_signal(signal.SIGTTIN)
    during = eventually(lambda: shared_by(3), "a third worker to take its share")
    assert len(set(during) - set(before)) == 1
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
    create_topic(bootstrap, topic, 4)
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
    ends = make_batched_topic(bootstrap, topic, {p: [25] for p in range(4)})
    pool = pools("RecordingWorker", 2, bootstrap, group, topic, "max_records_per_worker=30")

    def all_done() -> None:
        done = set(pool.processed())
        assert all((p, o) in done for p, end in ends.items() for o in range(end))
        assert "(recycled); restarting it" in pool.log()

    eventually(all_done, "every record processed by recycled workers")
    pool.proc.send_signal(signal.SIGHUP)
    eventually(lambda: _assert("rolling restart: worker 1 replaced" in pool.log()),
               "both workers to be replaced one at a time")
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert log.index("rolling restart: worker 0 replaced") < log.index(
        "rolling restart: worker 1 replaced")
    assert committed(bootstrap, group, topic, len(ends)) == ends


def test_a_second_sigint_stops_at_once(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {p: [1] for p in range(1)})
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
    make_batched_topic(bootstrap, topic, {p: [3] for p in range(1)})
    pool = pools("CrashesOnRecords", 1, bootstrap, group, topic, "crash_loop_count=2")
    status = pool.proc.wait(WAIT)
    log = pool.log()
    assert status == 1, log
    assert "Crash loop: 2 worker failures within 60 s; stopping the pool" in log
    assert "RuntimeError: CrashesOnRecords cannot handle offset 0" in log.split("Crash loop")[1]


def test_workers_stop_when_their_supervisor_is_killed(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {p: [5] for p in range(2)})
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
    make_batched_topic(bootstrap, topic, {p: [1] for p in range(1)})
    pool = pools("SlowWorker", 1, bootstrap, group, topic, "graceful_timeout_s=2")
    eventually(lambda: _assert(any(line["kind"] == "started" for line in pool.lines())),
               "the worker to start on its record")
    started = time.monotonic()
    assert pool.stop(timeout=30) == 0, pool.log()
    assert time.monotonic() - started < 15
    assert "did not stop within graceful_timeout_s 2.0: killing it" in pool.log()
