"""The pool's metrics endpoint: every worker's metrics (prometheus-client multiprocess mode)
plus the pool's own, and a ``/healthz`` that is 200 while every slot has a running worker.

Follows ``groupkit.metrics.multiprocess``: a private empty directory, named to the workers in
``PROMETHEUS_MULTIPROC_DIR`` when they start; dead workers marked; the directory removed at the
end. The pool's own metrics live in the supervisor's memory: the supervisor never sets the
variable for itself, so its prometheus-client keeps in-process values.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any, cast

from prometheus_client import Counter, Gauge

from groupkit.metrics import HealthStatus, mark_process_dead, multiprocess_registry, serve
from groupkit.workers.slots import RESTART_REASONS

__all__ = ["PoolMetrics", "STATES"]

#: The ``state`` label of groupkit_pool_workers.
STATES = ("running", "starting", "stopping", "missing")


class _PoolHealth:
    """What ``serve`` asks at /healthz: healthy while every wanted slot has a worker that has
    started polling and is not being stopped."""

    def __init__(self) -> None:
        self.status = HealthStatus(False, "the pool is starting", {})

    def check(self) -> HealthStatus:
        return self.status


class PoolMetrics:
    """The pool's gauges and counters, the shared directory, and the served registry."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.registry = multiprocess_registry(directory)
        self.workers = Gauge("groupkit_pool_workers", "Worker processes of the pool by state"
                             " (starting: not polled yet; missing: waiting to be started)",
                             ["state"], registry=self.registry)
        self.restarts = Counter("groupkit_pool_worker_restarts_total",
                                "Workers started again, by why the previous one ended",
                                ["reason"], registry=self.registry)
        for reason in RESTART_REASONS:
            self.restarts.labels(reason=reason)
        self.health = _PoolHealth()
        #: Where /metrics and /healthz are served, once ``serving`` has started the server.
        self.address: tuple[str, int] | None = None

    @classmethod
    @contextlib.contextmanager
    def serving(cls, port: int, host: str) -> Iterator[PoolMetrics]:
        """Make the directory, serve /metrics and /healthz (at ``address``), and clean both up
        at the end."""
        directory = tempfile.mkdtemp(prefix="groupkit-pool-metrics-")
        try:
            metrics = cls(directory)
            server = serve(metrics.registry, port, host, health=cast(Any, metrics.health))
            metrics.address = server.address
            try:
                yield metrics
            finally:
                server.close()
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def update(self, running: Mapping[int, Any], desired: set[int]) -> None:
        """Set the state gauge and the health verdict from the supervisor's view."""
        counts = dict.fromkeys(STATES, 0)
        for r in running.values():
            state = "stopping" if r.stopping else "running" if r.polled else "starting"
            counts[state] += 1
        missing = [s for s in desired if s not in running]
        counts["missing"] = len(missing)
        for state, n in counts.items():
            self.workers.labels(state=state).set(n)
        unready = sorted(s for s in desired if s not in running or running[s].stopping
                         or not running[s].polled)
        details = {"workers": len(desired), "running": counts["running"]}
        self.health.status = (
            HealthStatus(True, "", details) if not unready else
            HealthStatus(False, f"worker slot(s) {unready} not running", details))

    def restarted(self, reason: str) -> None:
        """Count a restart."""
        self.restarts.labels(reason=reason).inc()

    def dead(self, pid: int) -> None:
        """A worker exited: its live gauges stop counting."""
        mark_process_dead(pid, self.directory)
