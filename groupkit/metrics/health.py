"""The health of one consumer, for ``/healthz`` (Kubernetes liveness and readiness probes).

Healthy means both:

- the application polled within ``max_poll_interval_ms`` (a stuck ``process()`` or a dead
  application thread fails this, as it would get the member removed from its group), and
- every group the consumer is in is held: the member is STABLE, or it has been rebalancing
  (looking for the coordinator, joining, syncing, revoking) for less than its rebalance timeout.
  A member that left (UNJOINED after its poll interval expired), is leaving, closed or failed
  is unhealthy.

``HealthCheck`` is a hook fed by the ``MemberStateChanged`` and ``Polled`` events. The rules are
plain functions of what it saw and ``now``: ``observe(event, now)`` and ``status(now)`` take
the time from the caller, so they are tested without a clock or a consumer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from groupkit.hooks import Event, MemberStateChanged, Polled

__all__ = ["HealthCheck", "HealthStatus"]

#: States in which the member is getting (back) to an assignment.
#: (The classic protocol's, then the consumer protocol's: KIP-848.)
REBALANCING = frozenset({"COORDINATOR_UNKNOWN", "PREPARING_REBALANCE", "COMPLETING_REBALANCE",
                         "REVOKING", "JOINING", "RECONCILING", "ACKNOWLEDGING", "FENCED"})
_WHY_NOT_MEMBER = {
    "UNJOINED": "is not a member of its group (it left, e.g. after the poll interval expired)",
    "STALE": "is not a member of its group (it left after the poll interval expired)",
    "UNSUBSCRIBED": "is not a member of its group",
    "PREPARE_LEAVING": "is leaving its group",
    "LEAVING": "is leaving its group",
    "CLOSED": "has closed",
    "FATAL": "stopped on a fatal error",
}


@attrs.frozen
class HealthStatus:
    """The verdict: ``healthy``, the ``reason`` when not, and the facts it rests on."""

    healthy: bool
    reason: str
    details: dict[str, Any]

    @property
    def http_status(self) -> int:
        """200 when healthy, 503 when not."""
        return 200 if self.healthy else 503

    def to_json(self) -> dict[str, Any]:
        """A small JSON body: status, reason (when unhealthy) and the details."""
        body: dict[str, Any] = {"status": "ok" if self.healthy else "unhealthy"}
        if not self.healthy:
            body["reason"] = self.reason
        body.update(self.details)
        return body


@attrs.define
class _Group:
    state: str
    since: float
    rebalancing_since: float | None


@attrs.define(eq=False)
class HealthCheck:
    """A hook that judges one consumer's health; pass it in ``hooks=[...]`` and to ``serve``.

    ``HealthCheck.for_config(consumer.config)`` takes the two limits from a consumer's settings.
    Before the first poll, time runs from the first event seen (the member starting), or from
    construction: a consumer that never polls is unhealthy after ``max_poll_interval_ms``.
    """

    max_poll_interval_s: float
    rebalance_timeout_s: float
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _started: float = attrs.field(init=False)
    _last_poll: float | None = attrs.field(init=False, default=None)
    _first_event: float | None = attrs.field(init=False, default=None)
    _groups: dict[str, _Group] = attrs.field(init=False, factory=dict)

    @_started.default
    def _now(self) -> float:
        return self.clock()

    @classmethod
    def for_config(cls, config: Any, clock: Callable[[], float] = time.monotonic
                   ) -> HealthCheck:
        """Limits from a ``ConsumerConfig`` (``max_poll_interval_ms`` and the rebalance
        timeout, which defaults to the poll interval as in the Java client)."""
        return cls(config.max_poll_interval_ms / 1000,
                   config.effective_rebalance_timeout_ms / 1000, clock)

    def __call__(self, event: Event) -> None:
        if isinstance(event, MemberStateChanged | Polled):
            self.observe(event, self.clock())

    def observe(self, event: Event, now: float) -> None:
        """Take in one event that happened at ``now``."""
        with self._lock:
            if self._first_event is None:
                self._first_event = now
            if isinstance(event, Polled):
                self._last_poll = now
            elif isinstance(event, MemberStateChanged):
                old = self._groups.get(event.group_id)
                rebalancing_since: float | None = None
                if event.state in REBALANCING:
                    rebalancing_since = now
                    if old is not None and old.rebalancing_since is not None:
                        rebalancing_since = old.rebalancing_since
                self._groups[event.group_id] = _Group(event.state, now, rebalancing_since)

    def check(self) -> HealthStatus:
        """The verdict now (by ``clock``)."""
        return self.status(self.clock())

    def status(self, now: float) -> HealthStatus:
        """The verdict at ``now``."""
        with self._lock:
            polled = self._last_poll
            if polled is None:
                polled = self._first_event if self._first_event is not None else self._started
            idle = now - polled
            details: dict[str, Any] = {
                "seconds_since_poll": round(idle, 3),
                "max_poll_interval_seconds": self.max_poll_interval_s,
                "groups": {g: {"state": s.state, "seconds_in_state": round(now - s.since, 3)}
                           for g, s in sorted(self._groups.items())},
            }
            reasons: list[str] = []
            if idle > self.max_poll_interval_s:
                what = "polled" if self._last_poll is None else "polled again"
                reasons.append(
                    f"the application has not {what} for {idle:.1f} s, longer than"
                    f" max_poll_interval_ms ({self.max_poll_interval_s * 1000:.0f} ms): it is"
                    " stuck or too slow in processing")
            for group, g in sorted(self._groups.items()):
                if g.state == "STABLE":
                    continue
                if g.rebalancing_since is not None:
                    took = now - g.rebalancing_since
                    if took > self.rebalance_timeout_s:
                        reasons.append(
                            f"the member of group {group} has been rebalancing for {took:.1f} s,"
                            f" longer than its rebalance timeout ({self.rebalance_timeout_s:.0f}"
                            " s)")
                    continue
                why = _WHY_NOT_MEMBER.get(g.state, f"is in state {g.state}")
                reasons.append(f"the member of group {group} {why}")
            return HealthStatus(not reasons, "; ".join(reasons), details)
