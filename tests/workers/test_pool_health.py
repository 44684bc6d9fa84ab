"""The pool's /healthz verdict and state gauge, from the supervisor's view of its slots."""

from __future__ import annotations

from pathlib import Path

import attrs
from prometheus_client import generate_latest

from groupkit.workers.pool_metrics import PoolMetrics


@attrs.define
class Seen:
    stopping: str | None = None
    polled: bool = True


def test_healthy_only_while_every_slot_has_a_polling_worker(tmp_path: Path) -> None:
    metrics = PoolMetrics(str(tmp_path))
    metrics.update({0: Seen(), 1: Seen()}, {0, 1})
    assert metrics.health.check().http_status == 200
    metrics.update({0: Seen(), 1: Seen(polled=False)}, {0, 1})
    verdict = metrics.health.check()
    assert verdict.http_status == 503 and "[1]" in verdict.reason
    metrics.update({0: Seen(stopping="rolling")}, {0, 1})
    verdict = metrics.health.check()
    assert verdict.http_status == 503 and "[0, 1]" in verdict.reason
    text = generate_latest(metrics.registry).decode()
    assert 'groupkit_pool_workers{state="stopping"} 1.0' in text
    assert 'groupkit_pool_workers{state="missing"} 1.0' in text
    assert 'groupkit_pool_workers{state="running"} 0.0' in text


def test_restarts_are_counted_by_reason(tmp_path: Path) -> None:
    metrics = PoolMetrics(str(tmp_path))
    metrics.restarted("crashed")
    metrics.restarted("crashed")
    text = generate_latest(metrics.registry).decode()
    assert 'groupkit_pool_worker_restarts_total{reason="crashed"} 2.0' in text
    assert 'groupkit_pool_worker_restarts_total{reason="rolling"} 0.0' in text
