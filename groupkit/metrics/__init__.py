"""Prometheus metrics and a health endpoint for groupkit consumers.

Two ways to turn them on:

- ``GroupConsumer(metrics_port=9100)`` (or ``metrics_port = 9100`` on the class): the worker
  serves ``/metrics`` and ``/healthz`` on that port while ``run()`` runs (0 picks a free port;
  read it from ``worker.metrics_address``).
- With a plain ``Consumer``: ``metrics = PrometheusMetrics()``, ``health =
  HealthCheck.for_config(consumer.config)``, pass both in ``hooks=[...]`` and call
  ``serve(metrics.registry, 9100, health=health)``.

A worker of a pool serves nothing itself: see ``groupkit.metrics.multiprocess``.
Importing this package loads prometheus-client; ``import groupkit`` does not.
"""

from __future__ import annotations

from groupkit.metrics.definitions import METRIC_NAMES, METRICS, MetricSet, MetricSpec
from groupkit.metrics.health import HealthCheck, HealthStatus
from groupkit.metrics.multiprocess import (
    mark_process_dead,
    multiprocess_dir,
    multiprocess_registry,
)
from groupkit.metrics.prometheus import PrometheusMetrics
from groupkit.metrics.server import MetricsServer, serve

__all__ = [
    "METRICS",
    "METRIC_NAMES",
    "HealthCheck",
    "HealthStatus",
    "MetricSet",
    "MetricSpec",
    "MetricsServer",
    "PrometheusMetrics",
    "mark_process_dead",
    "multiprocess_dir",
    "multiprocess_registry",
    "serve",
]
