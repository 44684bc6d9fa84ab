"""The entry point of one worker process of a pool, and what it reports to its supervisor.

The supervisor starts each worker with the ``spawn`` start method, so the process begins as a
fresh interpreter that inherits nothing from the supervisor but its file descriptors 0-2 and
environment: no sockets, threads, locks or broker connections. The worker class is named by
``"module:qualname"`` and imported here, after ``PROMETHEUS_MULTIPROC_DIR`` is set, because
prometheus-client picks its value store when it is first imported.

Liveness: a hook writes ``time.monotonic()`` (system-wide on Linux) into a shared double on
every poll. A worker stuck in a call that holds the GIL stops writing it, however healthy its
heartbeat thread was, and the supervisor kills it.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

import attrs

from groupkit.errors import UnreleasedInstanceIdError

__all__ = ["EXIT_BOOT_ERROR", "EXIT_CRASHED", "EXIT_UNRELEASED", "WorkerSpec", "class_path",
           "worker_main"]

log = logging.getLogger("groupkit.workers.worker")

#: Exit status of a worker whose class could not be imported or constructed (as gunicorn's).
EXIT_BOOT_ERROR = 3
#: Exit status of a worker whose run() raised.
EXIT_CRASHED = 1
#: Exit status of a static worker refused its group instance id under the consumer group
#: protocol (UNRELEASED_INSTANCE_ID: the member that held it has not left the group yet).
EXIT_UNRELEASED = 4


@attrs.frozen
class WorkerSpec:
    """What a worker process needs to build its member: all plain, picklable values."""

    class_path: str
    slot: int
    settings: dict[str, Any]
    max_records: int | None
    metrics_dir: str | None
    log_level: int


def class_path(cls: type) -> str:
    """``"module:qualname"`` of ``cls``, to import it again in the worker."""
    return f"{cls.__module__}:{cls.__qualname__}"


def load_class(path: str) -> type:
    """Import ``"module:qualname"`` and return the class it names."""
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not isinstance(target, type):
        raise TypeError(f"{path} is not a class")
    return target


class _Liveness:
    """A hook: stamps the shared liveness value on every poll, counts processed records to
    recycle the worker after ``max_records``, and stops the worker if its supervisor is gone."""

    def __init__(self, beat: Any, max_records: int | None) -> None:
        self.beat = beat
        self.max_records = max_records
        self.records = 0
        self.recycled = False
        self.parent = os.getppid()
        self.worker: Any = None

    def __call__(self, event: object) -> None:
        from groupkit.hooks import Polled, Processed

        if isinstance(event, Polled):
            self.beat.value = time.monotonic()
            if os.getppid() != self.parent and self.worker is not None:
                log.error("the pool's supervisor is gone: stopping")
                self.worker.stop()
        elif isinstance(event, Processed) and self.max_records is not None:
            self.records += event.records
            if self.records >= self.max_records and not self.recycled:
                self.recycled = True
                log.info("processed %d records (max_records_per_worker %d): stopping to be"
                         " replaced", self.records, self.max_records)
                if self.worker is not None:
                    self.worker.stop()


def _stable_transactional_id(cls: type, settings: dict[str, Any], slot: int) -> None:
    """An exactly-once worker gets "<group>-worker-<slot>" as its transactional id unless it
    names one: the replacement of a killed worker takes the same id, so its init_transactions
    fences the old one and aborts its open transaction at once (not after
    transaction_timeout_ms)."""
    guarantee = settings.get("processing_guarantee", getattr(cls, "processing_guarantee", None))
    if guarantee != "exactly_once_v2" or settings.get(
            "transactional_id", getattr(cls, "transactional_id", None)) is not None:
        return
    group = settings.get("group_id", getattr(cls, "group_id", None))
    settings["transactional_id"] = f"{group}-worker-{slot}"


def worker_main(spec: WorkerSpec, beat: Any, conn: Connection) -> None:
    """Run one member of the pool's group; report how it ended on ``conn`` and exit.

    Messages: ``("boot_error", traceback)``, ``("crashed", traceback)``, ``("recycled", n)``,
    ``("done", n)`` with n the records processed.
    """
    # Until GroupConsumer.run() installs its own handlers: a terminal's Ctrl-C reaches the
    # whole process group, and the supervisor decides what it means (it sends SIGTERM). The
    # job-control signals meant for the supervisor must not stop a worker either.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(
        level=spec.log_level, force=True,
        format=f"%(asctime)s %(levelname)s [worker {spec.slot} pid %(process)d] %(name)s:"
               " %(message)s")
    if spec.metrics_dir is not None:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = spec.metrics_dir
    beat.value = time.monotonic()
    liveness = _Liveness(beat, spec.max_records)
    try:
        cls = load_class(spec.class_path)
        # The pool serves the metrics of all its workers; a worker serves none of its own.
        settings = {**spec.settings, "metrics_port": None}
        _stable_transactional_id(cls, settings, spec.slot)
        hooks = list(settings.pop("hooks", getattr(cls, "hooks", ())))
        hooks.append(liveness)
        if spec.metrics_dir is not None:
            from groupkit.metrics import PrometheusMetrics

            hooks.append(PrometheusMetrics())
        worker = cls(hooks=hooks, **settings)
    except Exception as exc:
        log.error("could not start %s: %s", spec.class_path, exc, exc_info=exc)
        conn.send(("boot_error", traceback.format_exc()))
        conn.close()
        raise SystemExit(EXIT_BOOT_ERROR) from None
    liveness.worker = worker
    try:
        summary = worker.run()
    except UnreleasedInstanceIdError as exc:
        # Fatal for the member, as in Java (ConsumerHeartbeatRequestManager); the slot's
        # previous worker, killed, holds the instance id until its session ends, so the
        # supervisor starts this slot again (SlotBook: "unreleased").
        log.warning("%s: group instance id %s is still held by the previous member: %s",
                    spec.class_path, settings.get("group_instance_id"), exc)
        conn.send(("unreleased", traceback.format_exc()))
        conn.close()
        raise SystemExit(EXIT_UNRELEASED) from None
    except Exception as exc:
        log.error("%s stopped on an error: %s", spec.class_path, exc, exc_info=exc)
        conn.send(("crashed", traceback.format_exc()))
        conn.close()
        raise SystemExit(EXIT_CRASHED) from None
    conn.send(("recycled" if liveness.recycled else "done", summary.records_processed))
    conn.close()
