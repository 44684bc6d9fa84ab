"""How ``poll`` takes the group runner's events (no broker: the coordinator never answers, so
the only events are the ones a test queues the way the runner does).

A poll asks the runner for events only after the runner said it queued one; these pin down
that no event is left waiting by that: not one queued while the poll waits, and not the ones
after an event whose listener raised.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer, ConsumerRebalanceListener
from groupkit.errors import IllegalStateError
from groupkit.group import Lost
from groupkit.runtime.fetcher import Fetcher

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Listener(ConsumerRebalanceListener):
    """Records each ``on_partitions_lost``; the first one raises."""

    def __init__(self) -> None:
        self.lost: list[set[TopicPartition]] = []

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.lost.append(partitions)
        if len(self.lost) == 1:
            raise RuntimeError("the application's listener failed")


@pytest.fixture
def consumer() -> Iterator[tuple[Consumer, Listener]]:
    made = Consumer(bootstrap_servers="127.0.0.1:9", group_id="g", enable_auto_commit=False)
    listener = Listener()
    try:
        made.subscribe(["t"], listener)
        made._assigned = {T0, T1}
        made._build_fetch_side()  # as the assignment that gave them would have (it is lazy)
        yield made, listener
    finally:
        made.close(1)


def queue(consumer: Consumer, event: object) -> None:
    """Queue ``event`` as the runner does (``_queue``: append, then ring the consumer)."""
    assert consumer._runner is not None
    consumer._runner._queue(event)  # type: ignore[arg-type]


def test_the_events_after_one_whose_listener_raised_are_taken_by_the_next_poll(
        consumer: tuple[Consumer, Listener]) -> None:
    made, listener = consumer
    queue(made, Lost(frozenset({("t", 0)}), "first"))
    queue(made, Lost(frozenset({("t", 1)}), "second"))
    with pytest.raises(RuntimeError, match="listener failed"):
        made.poll(0)
    assert listener.lost == [{T0}]
    # Nothing rings again: the poll must know by itself that an event still waits.
    assert made.poll(0) == []
    assert listener.lost == [{T0}, {T1}]


def test_an_event_queued_after_the_poll_looked_is_taken_before_it_returns(
        consumer: tuple[Consumer, Listener], monkeypatch: pytest.MonkeyPatch) -> None:
    # Queued while the poll looks at its records (after it looked at the events): the ring
    # ends the wait at once and the next look takes the event.
    made, listener = consumer
    listener.lost.append(set())  # the listener raises only on its first call
    take = Fetcher.take
    looks: list[Fetcher] = []

    def queueing(fetcher: Fetcher, *args: Any) -> Any:
        looks.append(fetcher)
        if len(looks) == 1:
            queue(made, Lost(frozenset({("t", 0)}), "queued"))
        return take(fetcher, *args)

    monkeypatch.setattr(Fetcher, "take", queueing)
    assert made.poll(0.5) == []
    assert listener.lost == [set(), {T0}]
    assert len(looks) == 2


def test_a_listener_may_call_the_consumer_inside_poll_while_other_threads_are_refused(
        consumer: tuple[Consumer, Listener]) -> None:
    # Java's acquire() counts the owner's nested calls; any other thread is refused until the
    # outermost call returns.
    made, listener = consumer
    listener.lost.append(set())  # the listener raises only on its first call
    outcomes: list[str] = []

    def from_another_thread() -> None:
        try:
            made.resume([])
        except IllegalStateError:
            outcomes.append("refused")
        else:
            outcomes.append("done")

    def on_lost(partitions: set[TopicPartition]) -> None:
        made.resume([])  # the thread inside poll calls in again
        outcomes.append("nested")
        other = threading.Thread(target=from_another_thread)
        other.start()
        other.join(10)

    listener.on_partitions_lost = on_lost  # type: ignore[method-assign]
    queue(made, Lost(frozenset({("t", 0)}), "lost"))
    assert made.poll(0) == []
    assert outcomes == ["nested", "refused"]
    # The nested call left the consumer held by the poll only: once it returned, another
    # thread gets in.
    from_another_thread()
    other = threading.Thread(target=from_another_thread)
    other.start()
    other.join(10)
    assert outcomes == ["nested", "refused", "done", "done"]
