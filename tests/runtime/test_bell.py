"""Bell: the runner's wakeup. Rings are never lost, never counted, and a wait keeps its timeout."""

from __future__ import annotations

import threading
import time

from groupkit.runtime.bell import Bell
from tests.support.threads import run_at_once


def test_a_ring_before_the_wait_makes_it_return_at_once() -> None:
    bell = Bell()
    bell.ring()
    assert bell.wait(30) is True


def test_rings_are_not_counted_the_second_wait_times_out() -> None:
    bell = Bell()
    bell.ring()
    bell.ring()
    assert bell.wait(30) is True
    start = time.monotonic()
    assert bell.wait(0.05) is False
    assert time.monotonic() - start >= 0.04


def test_an_unrung_wait_returns_false_within_its_timeout() -> None:
    bell = Bell()
    start = time.monotonic()
    assert bell.wait(0.1) is False
    assert 0.09 <= time.monotonic() - start < 5
    assert bell.wait(0) is False
    assert bell.wait(-1) is False  # a deadline already past: look, do not block


def test_a_ring_from_another_thread_wakes_the_waiter() -> None:
    bell = Bell()
    waiting = threading.Event()
    woke: list[bool] = []

    def waiter() -> None:
        waiting.set()
        woke.append(bell.wait(30))

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(10)
    bell.ring()
    thread.join(10)
    assert woke == [True]


def test_many_threads_ringing_at_once_neither_raise_nor_lose_the_ring() -> None:
    bell = Bell()
    assert run_at_once(bell.ring, threads=8, times=2000) == []
    assert bell.wait(0) is True  # rung, once
    assert bell.wait(0) is False


def test_a_wait_without_timeout_blocks_until_rung() -> None:
    bell = Bell()
    done = threading.Event()

    def waiter() -> None:
        bell.wait()
        done.set()

    threading.Thread(target=waiter, daemon=True).start()
    assert not done.wait(0.1)  # still waiting: nothing rang
    bell.ring()
    assert done.wait(10)


def test_a_nan_timeout_looks_without_blocking() -> None:
    # poll(float("nan")) computes a NaN wait: it must look and return, not wait for ever.
    bell = Bell()
    returned: list[bool] = []
    waiter = threading.Thread(target=lambda: returned.append(bell.wait(float("nan"))),
                              daemon=True)
    waiter.start()
    waiter.join(10)
    assert returned == [False]
