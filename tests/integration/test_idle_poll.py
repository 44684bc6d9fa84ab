"""An idle poll (nothing to return, nothing finished) looks at finished commits and waits
without a Python-level ``Condition`` (its ``__enter__``/``__exit__`` pair, or a ``wait`` that
makes a new lock each time): an idle member polls several times a second. Whatever rings the
consumer's bell (records, errors, group events, finished commits) still ends the wait at once.
While a poll waits, another thread may end it with ``wakeup()``; any other call of the
consumer's from that thread raises, as Java's does.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.errors import IllegalStateError, WakeupError
from groupkit.runtime.bell import Bell
from groupkit.runtime.fetcher import Fetcher
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_topic, produce
from tests.support.threads import run_at_once


@pytest.fixture
def idle_consumer(kafka_broker: LocalBroker, unique_name) -> Iterator[Consumer]:  # noqa: F811
    """A consumer assigned a one-partition topic whose one record it has read: idle from here."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("idle-poll")
    make_topic(bootstrap, topic, 1, 0)
    produce(bootstrap, topic, [1])
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        for _ in range(100):
            got += consumer.poll(0.1)
            if got:
                break
        assert [r.offset for r in got] == [0]
        yield consumer
    finally:
        consumer.close(5)


def test_an_idle_poll_enters_none_of_the_consumers_conditions(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = idle_consumer
    entered: list[threading.Condition] = []
    enter = threading.Condition.__enter__

    def spy(cond: threading.Condition) -> bool:
        if threading.current_thread() is threading.main_thread():
            entered.append(cond)
        return enter(cond)

    monkeypatch.setattr(threading.Condition, "__enter__", spy)
    for _ in range(5):
        assert consumer.poll(0.02) == []
    monkeypatch.undo()
    ours = [c for c in entered if c is consumer._offsets._lock]
    assert ours == []


def test_an_idle_poll_waits_on_no_condition(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[threading.Condition] = []
    wait = threading.Condition.wait

    def spy(cond: threading.Condition, timeout: float | None = None) -> bool:
        if threading.current_thread() is threading.main_thread():
            waited.append(cond)
        return wait(cond, timeout)

    monkeypatch.setattr(threading.Condition, "wait", spy)
    for _ in range(5):
        assert idle_consumer.poll(0.02) == []
    monkeypatch.undo()
    assert waited == []


def _count_looks(monkeypatch: pytest.MonkeyPatch,
                 on_look: Callable[[int], object] = lambda n: None) -> list[Fetcher]:
    """Record each look a poll takes (a ``Fetcher.take``); ``on_look(n)`` runs at the n-th."""
    looks: list[Fetcher] = []
    take = Fetcher.take

    def counted(fetcher: Fetcher, *args: Any) -> Any:
        looks.append(fetcher)
        on_look(len(looks))
        return take(fetcher, *args)

    monkeypatch.setattr(Fetcher, "take", counted)
    return looks


def test_a_ring_while_the_poll_looks_ends_its_wait_at_once(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # News that arrives after a look found nothing, but before the poll waits, must not wait
    # for the poll's deadline: the ring stays until the poll takes it and looks again. (Were
    # it lost, the wait would run out unwoken and the poll return after one look.)
    consumer = idle_consumer
    looks = _count_looks(monkeypatch, lambda n: consumer._bell.ring() if n == 1 else None)
    assert consumer.poll(0.3) == []
    assert looks == [consumer._fetcher] * 2


def test_rings_from_several_threads_wake_one_poll_once(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Several wakers before the poll takes the ring: none fails, the poll looks once more,
    # and no ring is left over to end the next poll's wait early.
    consumer = idle_consumer
    assert run_at_once(consumer._bell.ring, threads=4) == []
    looks = _count_looks(monkeypatch)
    assert consumer.poll(0.2) == []
    assert len(looks) == 1  # the ring from before the poll was taken
    looks.clear()
    assert consumer.poll(0.05) == []
    assert len(looks) == 1


def test_a_poll_whose_wait_runs_out_unwoken_returns_without_a_second_look(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Records, errors, group events and finished commits wake a waiting poll; a wait that runs
    # to the deadline unwoken found nothing, and the poll returns as Java's does at its timer.
    consumer = idle_consumer
    looks = _count_looks(monkeypatch)
    for _ in range(5):
        assert consumer.poll(0.05) == []
    assert looks == [consumer._fetcher] * 5


def test_an_async_commits_callback_runs_in_the_poll_that_waits_as_it_finishes(
        kafka_broker: LocalBroker, unique_name  # noqa: F811
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("idle-commit")
    make_topic(bootstrap, topic, 1, 0)
    tp = TopicPartition(topic, 0)
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=unique_name("idle-commit-g"),
                        auto_offset_reset="earliest", enable_auto_commit=False)
    ran: list[tuple[float, BaseException | None]] = []
    try:
        consumer.assign([tp])
        for _ in range(3):  # its position is found and the fetching settles
            assert consumer.poll(0.3) == []
        consumer.commit_async({tp: 0}, lambda offsets, error: ran.append(
            (time.monotonic(), error)))
        assert consumer.poll(4.0) == []
        returned = time.monotonic()
        # The commit's answer woke the poll, which ran the callback then, not at its end.
        assert len(ran) == 1 and ran[0][1] is None
        assert ran[0][0] < returned - 2.0
    finally:
        consumer.close(5)


# --- wakeup() ----------------------------------------------------------------------------------


def _when_polls_wait(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set as the application's thread goes to wait in a poll (the look found nothing)."""
    waiting = threading.Event()
    wait = Bell.wait

    def spy(bell: Bell, timeout: float | None = None) -> bool:
        if timeout and threading.current_thread() is threading.main_thread():
            waiting.set()
        return wait(bell, timeout)

    monkeypatch.setattr(Bell, "wait", spy)
    return waiting


def _poll_until_woken(consumer: Consumer, meanwhile: Callable[[], object]) -> None:
    """Poll (up to 20 s) while ``meanwhile`` runs on a thread of its own: the poll must end
    with WakeupError, and the thread within 20 s."""
    thread = threading.Thread(target=meanwhile)
    thread.start()
    try:
        with pytest.raises(WakeupError, match="wakeup"):
            consumer.poll(20)
    finally:
        thread.join(20)
    assert not thread.is_alive()


def test_wakeup_from_another_thread_ends_a_waiting_poll(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Java's KafkaConsumer.wakeup(): the blocked poll throws WakeupException. Were the wakeup
    # lost, this poll would return [] after 20 s and the test fail.
    waiting = _when_polls_wait(monkeypatch)
    _poll_until_woken(idle_consumer, lambda: waiting.wait(20) and idle_consumer.wakeup())
    assert waiting.is_set()


def test_wakeup_from_a_signal_handler_ends_a_waiting_poll(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # How a worker stops on SIGTERM: its handler runs on the thread that is waiting in poll.
    # The signal is sent once the thread sleeps: CPython runs a handler between bytecodes, so
    # a signal in the instant after the poll's last bytecode and before its wait blocks is
    # handled when that wait ends (the sender, woken by the spy, is scheduled just then).
    waiting = _when_polls_wait(monkeypatch)
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: idle_consumer.wakeup())
    stat = f"/proc/self/task/{threading.main_thread().native_id}/stat"

    def send() -> None:
        assert waiting.wait(20)
        for _ in range(2000):
            with open(stat) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "S":
                    break
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGUSR1)

    try:
        _poll_until_woken(idle_consumer, send)
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_wakeup_with_no_poll_waiting_ends_the_next_poll_only(idle_consumer: Consumer) -> None:
    idle_consumer.wakeup()
    with pytest.raises(WakeupError):
        idle_consumer.poll(20)
    # Used up: the poll after it waits out its timeout as usual.
    assert idle_consumer.poll(0.05) == []


def test_records_that_come_as_a_poll_is_woken_come_with_the_next_poll(
        idle_consumer: Consumer) -> None:
    (tp,) = idle_consumer.assignment()
    host, port = idle_consumer.config.bootstrap_servers[0]
    produce(f"{host}:{port}", tp.topic, [2])
    idle_consumer.wakeup()
    with pytest.raises(WakeupError):
        idle_consumer.poll(20)
    got: list[int] = []
    for _ in range(100):
        got += [r.offset for r in idle_consumer.poll(0.1)]
        if got:
            break
    assert got == [1]


# --- one thread at a time ----------------------------------------------------------------------


def test_calls_from_another_thread_while_a_poll_waits_raise_and_leave_the_poll_alone(
        idle_consumer: Consumer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Java's KafkaConsumer.acquire() throws ConcurrentModificationException here.
    consumer = idle_consumer
    (tp,) = consumer.assignment()
    waiting = _when_polls_wait(monkeypatch)
    refused: list[str] = []

    def intrude() -> None:
        assert waiting.wait(20)
        for name, call in [("poll", lambda: consumer.poll(0)),
                           ("commit_async", lambda: consumer.commit_async({tp: 0})),
                           ("seek", lambda: consumer.seek(tp, 0)),
                           ("close", lambda: consumer.close(1))]:
            with pytest.raises(IllegalStateError, match=rf"Consumer\.{name}\(\).*wakeup\(\)"):
                call()
            refused.append(name)
        consumer.wakeup()

    _poll_until_woken(consumer, intrude)
    assert refused == ["poll", "commit_async", "seek", "close"]
    # Nothing was done by the refused calls: the consumer is open, its position unmoved.
    assert consumer.position(tp, 5) == 1
    assert consumer.poll(0.05) == []


def test_threads_may_take_turns_with_one_consumer(idle_consumer: Consumer) -> None:
    results: list[object] = []
    turn = threading.Thread(target=lambda: results.append(idle_consumer.poll(0.05)))
    turn.start()
    turn.join(20)
    assert results == [[]]
    assert idle_consumer.poll(0.05) == []
