"""SlotBook: back-off doubles per slot within the window, and a crash loop is K failures in T s.

The back-off's jitter is pinned at its midpoint (factor 1.0) so delays are exact."""

from __future__ import annotations

from groupkit.workers.slots import CrashLoop, SlotBook


def book() -> SlotBook:
    return SlotBook(backoff_initial_s=0.5, backoff_max_s=4.0, crash_loop_count=4, window_s=60.0,
                    jitter=lambda: 0.5)


def test_back_off_doubles_up_to_the_maximum_and_forgets_old_crashes() -> None:
    b = book()
    assert [b.restart(0, "crashed", t) for t in (0.0, 1.0, 2.0)] == [0.5, 1.0, 2.0]
    assert not b.ready(0, 3.9) and b.ready(0, 4.0)
    assert b.restart(1, "unresponsive", 3.0) == 0.5  # per slot
    assert b.restart(0, "exited", 100.0) == 0.5  # the earlier crashes left the window


def test_planned_restarts_wait_for_nothing_and_are_not_crashes() -> None:
    b = book()
    for t in range(10):
        assert b.restart(0, "rolling", float(t)) == 0.0
        assert b.restart(1, "recycled", float(t)) == 0.0
    assert b.crash_loop() is None
    assert b.ready(0, 9.0)


def test_a_crash_loop_is_k_failures_within_the_window_across_slots() -> None:
    b = book()
    for slot, t in [(0, 0.0), (1, 10.0), (2, 20.0)]:
        b.restart(slot, "crashed", t)
    assert b.crash_loop() is None
    b.restart(0, "crashed", 61.0)  # the first has left the window
    assert b.crash_loop() is None
    b.restart(1, "crashed", 62.0)
    assert b.crash_loop() == CrashLoop(4, 60.0)


def test_summary_counts_starts_exits_and_restarts_per_slot() -> None:
    b = book()
    b.started(0)
    b.exited(0)
    b.restart(0, "crashed", 0.0)
    b.started(0)
    b.started(1)
    first, second = b.summary()
    assert (first.slot, first.starts, first.exits, first.restarts) == (0, 2, 1, {"crashed": 1})
    assert (second.slot, second.starts, second.exits, second.restarts) == (1, 1, 0, {})


def test_restart_delays_are_jittered_by_at_most_a_fifth_and_never_past_the_maximum() -> None:
    low = SlotBook(0.5, 4.0, 100, 60.0, jitter=lambda: 0.0)
    high = SlotBook(0.5, 4.0, 100, 60.0, jitter=lambda: 0.999999)
    assert low.restart(0, "crashed", 0.0) == 0.4
    assert 0.5999 < high.restart(0, "crashed", 0.0) < 0.6
    assert [high.restart(0, "crashed", float(t)) for t in range(1, 6)][-1] == 4.0


def test_an_unreleased_instance_id_backs_off_and_is_no_crash_within_the_window() -> None:
    b = book()
    # A static slot refused its instance id while its killed predecessor's session runs.
    assert [b.restart(0, "unreleased", t) for t in (0.0, 1.0, 2.0, 5.0)] == [0.5, 1.0, 2.0, 4.0]
    assert b.crash_loop() is None and not b.ready(0, 8.9) and b.ready(0, 9.0)
    # Still refused after the window (another process holds the id): each counts as a crash.
    for t in (61.0, 62.0, 63.0):
        b.restart(0, "unreleased", t)
    assert b.crash_loop() is None
    b.restart(0, "unreleased", 64.0)
    assert b.crash_loop() == CrashLoop(4, 60.0)


def test_a_run_of_unreleased_restarts_ends_with_any_other_restart() -> None:
    b = book()
    b.restart(0, "unreleased", 0.0)
    b.restart(0, "rolling", 50.0)  # the slot ran in between
    assert b.restart(0, "unreleased", 100.0) == 0.5  # a new run: waiting, no crash
    assert b.summary()[0].restarts == {"unreleased": 2, "rolling": 1}
    assert b.crash_loop() is None
