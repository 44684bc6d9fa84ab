"""Slot bookkeeping for the worker pool: who runs in each slot, how often it crashed, when it may
start again, and whether the pool as a whole is in a crash loop.

Pure bookkeeping: no processes, no clocks of its own (the supervisor passes ``now``), so the
back-off and crash-loop rules are unit-testable without spawning anything.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable

import attrs

from groupkit.group.backoff import Backoff, random_jitter

__all__ = ["CrashLoop", "RESTART_REASONS", "SlotBook", "SlotSummary"]

#: Why a worker was started again (the ``reason`` label of groupkit_pool_worker_restarts_total).
#: "unreleased": a static member under the consumer group protocol (KIP-848) was refused its
#: group instance id because the previous member holding it has not left (see ``restart``).
RESTART_REASONS = ("crashed", "unresponsive", "exited", "recycled", "rolling", "unreleased")
# Unexpected ends: they wait out a back-off and count towards a crash loop. A worker that
# returned on its own ("exited") was not asked to, so it is treated like a crash; so is an
# "unreleased" one once the slot has waited longer than the window (``SlotBook``).
_BACKED_OFF = ("crashed", "unresponsive", "exited", "unreleased")


@attrs.frozen
class SlotSummary:
    """What happened in one slot over the pool's run: processes started, processes that
    exited (for any reason), and restarts by reason."""

    slot: int
    starts: int
    exits: int
    restarts: dict[str, int]


@attrs.frozen
class CrashLoop:
    """The pool saw ``crashes`` crashes within ``window_s`` seconds: it stops."""

    crashes: int
    window_s: float


@attrs.define
class _Slot:
    starts: int = 0
    exits: int = 0
    restarts: Counter[str] = attrs.field(factory=Counter)
    crash_times: deque[float] = attrs.field(factory=deque)
    not_before: float = 0.0
    #: When the slot's current run of "unreleased" restarts began, and how many it holds.
    unreleased_since: float | None = None
    unreleased: int = 0


@attrs.define
class SlotBook:
    """Counts per slot, exponential back-off per slot, crash-loop detection for the pool.

    Back-off: after its n-th crash within ``window_s`` a slot waits
    ``min(backoff_initial_s * 2**(n-1), backoff_max_s)``, jittered by up to 20% (groupkit's one
    back-off, ``groupkit.group.backoff``, so crashed slots do not restart in lockstep), before
    it starts again. Crash loop: ``crash_loop_count`` crashes (any slot) within ``window_s``
    seconds. ``jitter`` is the back-off's random source (tests pass a constant).

    An "unreleased" restart (a static member refused because the member that held its instance
    id before, typically the slot's killed worker, is still in the group until its session
    ends) backs off the same way but is no crash while the slot's run of them is younger than
    ``window_s``: a crashed member's session ends within the broker's
    ``group.consumer.max.session.timeout.ms`` (60 s by default, the window's default). Past it,
    each counts as a crash (another process may be using the instance id).
    """

    backoff_initial_s: float
    backoff_max_s: float
    crash_loop_count: int
    window_s: float
    jitter: Callable[[], float] = random_jitter
    _slots: dict[int, _Slot] = attrs.field(factory=dict)
    _crashes: deque[float] = attrs.field(factory=deque)
    _backoff: Backoff = attrs.field(init=False)

    @_backoff.default
    def _make_backoff(self) -> Backoff:
        return Backoff(self.backoff_initial_s * 1000, self.backoff_max_s * 1000, self.jitter)

    def started(self, slot: int) -> None:
        """A process was started in ``slot``."""
        self._slots.setdefault(slot, _Slot()).starts += 1

    def exited(self, slot: int) -> None:
        """The process in ``slot`` exited (any cause)."""
        self._slots.setdefault(slot, _Slot()).exits += 1

    def restart(self, slot: int, reason: str, now: float) -> float:
        """Record that ``slot`` will be started again for ``reason``; return the delay before
        it may start (0 unless the reason is a crash, a hang or an unreleased instance id)."""
        entry = self._slots.setdefault(slot, _Slot())
        entry.restarts[reason] += 1
        if reason == "unreleased":
            if entry.unreleased_since is None:
                entry.unreleased_since = now
            if now - entry.unreleased_since <= self.window_s:
                entry.unreleased += 1
                delay = self._backoff.delay(entry.unreleased)
                entry.not_before = now + delay
                return delay
        else:
            entry.unreleased_since, entry.unreleased = None, 0
        if reason not in _BACKED_OFF:
            entry.not_before = now
            return 0.0
        self._crashes.append(now)
        entry.crash_times.append(now)
        for times in (self._crashes, entry.crash_times):
            while times and times[0] < now - self.window_s:
                times.popleft()
        delay = self._backoff.delay(len(entry.crash_times))
        entry.not_before = now + delay
        return delay

    def crash_loop(self) -> CrashLoop | None:
        """A CrashLoop when ``crash_loop_count`` crashes fell within the window, else None."""
        if len(self._crashes) >= self.crash_loop_count:
            return CrashLoop(len(self._crashes), self.window_s)
        return None

    def ready(self, slot: int, now: float) -> bool:
        """Whether ``slot``'s back-off has passed."""
        entry = self._slots.get(slot)
        return entry is None or now >= entry.not_before

    def summary(self) -> tuple[SlotSummary, ...]:
        """Per-slot counts, in slot order."""
        return tuple(SlotSummary(slot, s.starts, s.exits, dict(s.restarts))
                     for slot, s in sorted(self._slots.items()))
