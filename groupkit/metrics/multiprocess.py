"""prometheus-client's multiprocess mode, for a supervisor that serves many workers' metrics.

How it fits together (the worker pool uses it):

1. The supervisor makes an empty private directory and sets ``PROMETHEUS_MULTIPROC_DIR`` to it
   in the environment its workers start with. The variable must be set before a process first
   imports ``prometheus_client`` (it picks its value store at import).
2. Each worker passes ``hooks=[groupkit.metrics.PrometheusMetrics()]``; its values go to files
   in that directory (one set per pid). A worker serves nothing itself.
3. The supervisor serves ``multiprocess_registry()`` (a registry with a
   ``MultiProcessCollector`` over the directory) with ``groupkit.metrics.serve``.
4. When a worker exits, the supervisor calls ``mark_process_dead(pid)`` so the ``live*``
   gauges (assigned partitions, lag, member state, last poll, last heartbeat) drop its values.
   Counters and histograms keep what the dead worker counted, as Prometheus expects.
5. The supervisor removes the directory when it stops.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, multiprocess as _multiprocess

from groupkit.errors import ConfigError

__all__ = ["mark_process_dead", "multiprocess_dir", "multiprocess_registry"]

_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """The multiprocess directory from the environment, or None when the mode is off."""
    return os.environ.get(_ENV) or os.environ.get(_ENV.lower()) or None


def multiprocess_registry(path: str | None = None) -> CollectorRegistry:
    """A new registry that collects every process's values from ``path`` (default: the
    ``PROMETHEUS_MULTIPROC_DIR`` directory), for the supervisor to serve."""
    path = path or multiprocess_dir()
    if path is None or not os.path.isdir(path):
        raise ConfigError(
            f"multiprocess metrics need a directory: set {_ENV} to an existing empty directory"
            f" (got {path!r}) before the workers start")
    registry = CollectorRegistry()
    _multiprocess.MultiProcessCollector(registry, path=path)
    return registry


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Tell the multiprocess store that worker ``pid`` is gone: its ``live*`` gauges stop
    counting. Call it from the supervisor after the worker has exited (e.g. after waitpid)."""
    path = path or multiprocess_dir()
    if path is None:
        raise ConfigError(f"mark_process_dead needs {_ENV} (or path=) to name the directory")
    _multiprocess.mark_process_dead(pid, path)
