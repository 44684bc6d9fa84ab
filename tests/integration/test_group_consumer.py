"""GroupConsumer against the local broker: process_batch, the error policies, stop() from
another thread, and SIGTERM to a worker process (it commits and leaves)."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

import groupkit.group_consumer as group_consumer_module
from groupkit.consumer import ConsumerRecord
from groupkit.group_consumer import GroupConsumer
from groupkit.runtime.bell import Bell
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import committed, create_topic, produce
from tests.support.group_workers import FAST_GROUP, Board, InThread, Spawned, Tally

pytestmark = pytest.mark.broker
WAIT = 45.0


class Batches(GroupConsumer):
    """Notes each batch it is given."""

    def __init__(self, board: Board, **settings: Any) -> None:
        super().__init__(**{**FAST_GROUP, **settings})
        self.board = board
        self.sizes: list[int] = []

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        self.sizes.append(len(records))
        for r in records:
            self.board.record("batches", r.partition, r.offset)


class FailsAt(Tally):
    """Raises from process for one offset."""

    def __init__(self, fail_at: int, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.fail_at = fail_at

    def process(self, record: ConsumerRecord) -> None:
        if record.offset == self.fail_at:
            raise ValueError(f"cannot handle offset {record.offset}")
        super().process(record)


def test_process_batch_gets_every_record_and_stop_from_another_thread_commits(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 3)
    produced = produce(bootstrap, topic, range(600), 3)
    board = Board()
    worker = Batches(board, bootstrap_servers=bootstrap, group_id=group, topics=[topic],
                     auto_commit_interval_ms=60_000)
    running = InThread(worker)
    board.wait(lambda: len(board.records) >= len(produced), WAIT, "all records")

    began = time.monotonic()
    summary = running.stop(WAIT)
    stopped_in = time.monotonic() - began

    assert board.seen() == produced
    assert summary.records_processed == len(produced) == sum(worker.sizes)
    assert max(worker.sizes) > 1, "process_batch should get more than one record at a time"
    # The interval (60 s) never came: these commits were made by stop().
    assert committed(bootstrap, group, topic, 3) == {0: 200, 1: 200, 2: 200}
    assert summary.commits >= 1
    assert stopped_in < 10.0


def test_stop_wakes_a_long_idle_poll_and_run_commits_and_returns(
        kafka_broker: LocalBroker, unique_name, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # Polls that could wait 120 s: a run() that returns within WAIT (45 s) after stop() was
    # ended by stop() waking the poll, not by the poll's timeout.
    monkeypatch.setattr(group_consumer_module, "_MAX_POLL_WAIT_S", 120.0)
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, range(5), 1)
    board = Board()
    long_wait = threading.Event()
    wait = Bell.wait

    def spy(bell: Bell, timeout: float | None = None) -> bool:
        if timeout is not None and timeout > 60:  # only the worker's polls wait that long
            long_wait.set()
        return wait(bell, timeout)

    monkeypatch.setattr(Bell, "wait", spy)
    running = InThread(Tally("idle", board, bootstrap_servers=bootstrap, group_id=group,
                             topics=[topic], auto_commit_interval_ms=600_000))
    board.wait(lambda: board.count("idle") >= 5, WAIT, "the five records")
    assert long_wait.wait(WAIT), "the worker never went into a long poll"
    summary = running.stop(WAIT)
    assert summary.records_processed == 5
    assert committed(bootstrap, group, topic, 1) == {0: 5}


def test_stop_policy_commits_before_the_failure_and_reraises_from_run(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, range(10), 1)
    board = Board()
    failing = InThread(FailsAt(4, "first", board, bootstrap_servers=bootstrap, group_id=group,
                               topics=[topic]))
    with pytest.raises(ValueError, match="cannot handle offset 4"):
        failing.join(WAIT)
    assert board.seen("first") == {(0, o) for o in range(4)}
    assert committed(bootstrap, group, topic, 1) == {0: 4}

    # The failed record was not lost: the next member of the group starts with it.
    again = InThread(Tally("second", board, bootstrap_servers=bootstrap, group_id=group,
                           topics=[topic]))
    board.wait(lambda: board.count("second") >= 6, WAIT, "the rest of the records")
    again.stop(WAIT)
    assert min(o for w, _, o, _ in board.records if w == "second") == 4
    assert board.seen("second") == {(0, o) for o in range(4, 10)}


def test_skip_policy_goes_on_and_commits_past_the_skipped_record(
        kafka_broker: LocalBroker, unique_name, caplog) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, range(10), 1)
    board = Board()
    running = InThread(FailsAt(4, "skipper", board, bootstrap_servers=bootstrap,
                               group_id=group, topics=[topic], on_error="skip"))
    board.wait(lambda: board.count("skipper") >= 9, WAIT, "the records around the bad one")
    summary = running.stop(WAIT)
    assert board.seen("skipper") == {(0, o) for o in range(10) if o != 4}
    assert (summary.records_processed, summary.records_skipped) == (9, 1)
    assert committed(bootstrap, group, topic, 1) == {0: 10}
    assert f"{topic}[0]@4" in caplog.text


def test_sigterm_makes_a_worker_process_commit_leave_and_exit_zero(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, 4)
    # A long session: if the worker did not leave, the other would wait 10 s or more for it.
    settings = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 500}
    board = Board()
    spawned = Spawned("proc", board, bootstrap, group, topic, auto_commit_interval_ms=60_000,
                      session_timeout_ms=10_000)
    try:
        other = InThread(Tally("thread", board, bootstrap_servers=bootstrap, group_id=group,
                               topics=[topic], **settings))
        board.wait(lambda: board.covered(["proc", "thread"], 4), WAIT, "both members to share")
        produced = produce(bootstrap, topic, range(400), 4)
        board.wait(lambda: board.seen() >= produced, WAIT, "every record")
        held = set(board.owners["proc"])

        spawned.proc.send_signal(signal.SIGTERM)
        assert spawned.wait(WAIT) == 0, spawned.stderr()
        exited = time.monotonic()
        board.wait(lambda: board.covered(["thread"], 4), WAIT, "the other to take over")
        took_over = max(t for w, kind, _, t in board.events if w == "thread") - exited
        other.stop(WAIT)
    finally:
        spawned.kill()

    assert board.finished["proc"]["processed"] == len(board.seen("proc")) > 0
    assert ("proc", "revoked", frozenset(held)) in {e[:3] for e in board.events}
    offsets = committed(bootstrap, group, topic, 4)
    assert offsets == {p: 100 for p in range(4)}
    assert held, "the worker process held partitions before SIGTERM"
    assert took_over < 10.0, f"takeover took {took_over:.1f}s: the worker did not leave"
