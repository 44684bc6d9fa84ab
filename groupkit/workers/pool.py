"""The worker pool's supervisor: starts N worker processes, keeps them alive, stops them.

One loop on the supervisor's main thread does everything: signal handlers only queue the
signal, and the loop reaps exited workers, kills silent ones, starts what is due (after
back-off), advances a rolling restart and applies queued signals, waiting at most
``_TICK_S`` on the workers' sentinels in between. See ``groupkit.workers`` for the behaviour.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

import attrs

from groupkit.errors import ConfigError
from groupkit.workers.slots import SlotBook, SlotSummary
from groupkit.workers.worker import EXIT_BOOT_ERROR, WorkerSpec, class_path, worker_main

__all__ = ["POOL_SETTINGS", "Pool", "PoolSummary"]

log = logging.getLogger("groupkit.workers")

_TICK_S = 0.1
#: Pool settings and their defaults; every other keyword goes to the worker class.
POOL_SETTINGS: dict[str, Any] = {
    "graceful_timeout_s": 30.0,
    "crash_loop_count": 5,
    "crash_loop_window_s": 60.0,
    "backoff_initial_s": 0.5,
    "backoff_max_s": 30.0,
    "liveness_grace_s": 10.0,
    "max_records_per_worker": None,
    "metrics_port": None,
    "metrics_host": "0.0.0.0",
}
#: Exit statuses of Pool.run(): stopped by a signal, crash loop, a worker that cannot start,
#: a second SIGINT (as a shell reports an interrupted command).
EXIT_OK, EXIT_CRASH_LOOP, EXIT_INTERRUPTED = 0, 1, 130


@attrs.frozen
class PoolSummary:
    """How ``Pool.run()`` ended: its exit status, why, the last worker traceback seen (if a
    worker failed) and per-slot counts of starts, exits and restarts."""

    exit_status: int
    reason: str
    slots: tuple[SlotSummary, ...]
    records_processed: int
    last_error: str | None = None


@attrs.define
class _Running:
    slot: int
    process: Any
    beat: Any
    conn: Connection
    started: float
    #: Why the supervisor asked it to stop ("rolling", "removed", "unresponsive", "shutdown").
    stopping: str | None = None
    kill_at: float | None = None
    message: tuple[str, Any] | None = None

    @property
    def polled(self) -> bool:
        return bool(self.beat.value > self.started)


class Pool:
    """Runs ``processes`` members of ``worker_class``'s group as supervised processes.

    ``settings`` are the pool's (see ``POOL_SETTINGS``) or the worker's: those go to the class
    as GroupConsumer keyword arguments, in the worker process.
    """

    def __init__(self, worker_class: type, processes: int = 1, **settings: Any) -> None:
        from groupkit.group_consumer import _CONSUMER_SETTINGS, _OWN_SETTINGS, GroupConsumer
        from groupkit.share_worker import SETTINGS as SHARE_WORKER_SETTINGS, ShareWorker

        if isinstance(worker_class, type) and issubclass(worker_class, ShareWorker):
            # Share-group workers: the pool may be larger than the partition count.
            worker_settings: tuple[str, ...] = SHARE_WORKER_SETTINGS
        elif isinstance(worker_class, type) and issubclass(worker_class, GroupConsumer):
            worker_settings = (*_CONSUMER_SETTINGS, *_OWN_SETTINGS)
        else:
            raise ConfigError(f"a Pool runs a GroupConsumer subclass or a ShareWorker subclass, not"
                              f" {worker_class!r}")
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ConfigError(f"processes must be a whole number of at least 1, not {processes!r}")
        known = (*worker_settings, *POOL_SETTINGS, "processes")
        for name in settings:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown setting {name!r} for a Pool of"
                                  f" {worker_class.__name__}{hint}")
        self.worker_class = worker_class
        self.processes = processes
        # A class that sets metrics_port gets it served by the pool: its workers serve nothing.
        settings.setdefault("metrics_port", getattr(worker_class, "metrics_port", None))
        self.options = {k: settings.pop(k, v) for k, v in POOL_SETTINGS.items()}
        self.worker_settings = settings
        _check_options(self.options)
        self.max_poll_s = settings.get(
            "max_poll_interval_ms", getattr(worker_class, "max_poll_interval_ms", 300000)) / 1000
        self._instance_id = settings.get(
            "group_instance_id", getattr(worker_class, "group_instance_id", None))
        self._context = multiprocessing.get_context("spawn")
        self._book = SlotBook(self.options["backoff_initial_s"], self.options["backoff_max_s"],
                              self.options["crash_loop_count"],
                              self.options["crash_loop_window_s"])
        self._desired: set[int] = set()
        self._running: dict[int, _Running] = {}
        self._signals: deque[int] = deque()
        self._roll: deque[int] = deque()
        self._rolling: int | None = None
        self._stop_deadline: float | None = None
        self._result: tuple[int, str] | None = None
        self._last_error: str | None = None
        self._records = 0
        self._metrics: Any = None
        #: ``(host, port)`` of the pool's /metrics while run() serves it (metrics_port set).
        self.metrics_address: tuple[str, int] | None = None

    # --- public ------------------------------------------------------------------------------

    def run(self) -> PoolSummary:
        """Start the workers and supervise them until a signal stops the pool or it fails."""
        self._desired = set(range(self.processes))
        log.info("pool of %d %s worker(s) starting (supervisor pid %d)", self.processes,
                 self.worker_class.__name__, os.getpid())
        try:
            with self._metrics_served(), self._signal_handlers():
                self._loop()
        finally:
            self._kill_all()
        status, reason = self._result or (EXIT_OK, "stopped")
        log.info("pool stopped (%s), exit status %d", reason, status)
        return PoolSummary(status, reason, self._book.summary(), self._records,
                           self._last_error)

    def request(self, signum: int) -> None:
        """Queue a signal as if it had arrived (the loop applies it); safe from any thread."""
        self._signals.append(signum)

    # --- the loop ------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            while self._signals:
                self._apply_signal(self._signals.popleft())
            self._reap()
            now = time.monotonic()
            if self._stop_deadline is not None:
                if not self._running:
                    return
                if now >= self._stop_deadline:
                    for r in self._running.values():
                        if r.process.exitcode is None:
                            log.warning("worker %d (pid %d) did not stop within"
                                        " graceful_timeout_s %.1f: killing it", r.slot,
                                        r.process.pid, self.options["graceful_timeout_s"])
                            r.process.kill()
                    self._stop_deadline = now + 5.0
            else:
                self._check_workers(now)
                self._advance_roll()
                self._start_due(now)
            if self._metrics is not None:
                self._metrics.update(self._running, self._desired)
            handles: list[Any] = [r.process.sentinel for r in self._running.values()]
            wait(handles, timeout=_TICK_S)

    def _reap(self) -> None:
        for slot, r in list(self._running.items()):
            if r.process.exitcode is None:
                continue
            with contextlib.suppress(EOFError, OSError):
                while r.conn.poll():
                    r.message = r.conn.recv()
            r.conn.close()
            r.process.join()
            del self._running[slot]
            self._book.exited(slot)
            if self._metrics is not None:
                self._metrics.dead(r.process.pid)
            self._on_exit(r)

    def _on_exit(self, r: _Running) -> None:
        code = r.process.exitcode
        how = (f"was killed by {signal.Signals(-code).name}" if code < 0
               else f"exited with status {code}")
        kind, payload = r.message or ("", None)
        if kind in ("done", "recycled"):
            self._records += int(payload or 0)
        if kind in ("boot_error", "crashed", "unreleased"):
            self._last_error = payload
        if self._stop_deadline is not None:
            log.info("worker %d (pid %d) %s", r.slot, r.process.pid, how)
            return
        if kind == "boot_error" or code == EXIT_BOOT_ERROR:
            log.error("worker %d (pid %d) could not start its %s (%s); stopping the pool:\n%s",
                      r.slot, r.process.pid, self.worker_class.__name__, how,
                      self._last_error or "(no traceback)")
            self._begin_stop(EXIT_BOOT_ERROR, "a worker could not start")
            return
        if r.stopping == "removed":
            log.info("worker %d (pid %d) %s; slot removed", r.slot, r.process.pid, how)
            return
        if r.stopping in ("rolling", "unresponsive"):
            reason = r.stopping
        elif kind == "recycled":
            reason = "recycled"
        elif kind == "unreleased":
            reason = "unreleased"
        elif code == 0:
            reason = "exited"
        else:
            reason = "crashed"
        delay = self._book.restart(r.slot, reason, time.monotonic())
        if self._metrics is not None:
            self._metrics.restarted(reason)
        loop = self._book.crash_loop()
        if loop is None:
            if reason == "unreleased":
                log.warning("worker %d (pid %d) %s: its group instance id is still held by the"
                            " slot's previous member until that one's session ends (consumer"
                            " group protocol); starting it again in %.1f s", r.slot,
                            r.process.pid, how, delay)
                return
            log.warning("worker %d (pid %d) %s (%s); restarting it in %.1f s", r.slot,
                        r.process.pid, how, reason, delay)
            return
        log.error("worker %d (pid %d) %s (%s). Crash loop: %d worker failures within %.0f s;"
                  " stopping the pool. The last worker traceback:\n%s", r.slot, r.process.pid,
                  how, reason, loop.crashes, loop.window_s,
                  self._last_error or "(none: the workers were killed or hung)")
        self._begin_stop(EXIT_CRASH_LOOP, "crash loop")

    def _check_workers(self, now: float) -> None:
        limit = self.max_poll_s + self.options["liveness_grace_s"]
        for r in self._running.values():
            if r.kill_at is not None and now >= r.kill_at and r.process.exitcode is None:
                log.warning("worker %d (pid %d) did not stop within graceful_timeout_s: killing"
                            " it", r.slot, r.process.pid)
                r.process.kill()
                r.kill_at = None
            silent = now - r.beat.value
            if r.stopping is None and silent > limit:
                log.error("worker %d (pid %d) has not polled for %.1f s (max_poll_interval_ms"
                          " plus liveness_grace_s is %.1f s): killing it", r.slot,
                          r.process.pid, silent, limit)
                r.stopping = "unresponsive"
                r.process.kill()

    def _start_due(self, now: float) -> None:
        for slot in sorted(self._desired):
            if slot not in self._running and self._book.ready(slot, now):
                self._spawn(slot, now)

    def _spawn(self, slot: int, now: float) -> None:
        settings = dict(self.worker_settings)
        if self._instance_id is not None:
            # Static membership per slot: a replacement rejoins as the same member.
            settings["group_instance_id"] = f"{self._instance_id}-{slot}"
        metrics_dir = self._metrics.directory if self._metrics is not None else None
        spec = WorkerSpec(class_path(self.worker_class), slot, settings,
                          self.options["max_records_per_worker"], metrics_dir,
                          logging.getLogger().getEffectiveLevel())
        beat = self._context.RawValue("d", now)
        receive, send = self._context.Pipe(duplex=False)
        # spawn, not fork: the worker starts as a new interpreter, so none of the supervisor's
        # threads (metrics server), locks (held by a logging handler mid-write) or sockets
        # can leak into it; forking a threaded process can deadlock the child.
        process = self._context.Process(target=worker_main, args=(spec, beat, send),
                                        name=f"groupkit-worker-{slot}")
        with _environment("PROMETHEUS_MULTIPROC_DIR", metrics_dir):
            process.start()
        send.close()
        self._running[slot] = _Running(slot, process, beat, receive, now)
        self._book.started(slot)
        log.info("worker %d started (pid %d)", slot, process.pid)

    def _advance_roll(self) -> None:
        if self._rolling is not None:
            if self._rolling not in self._desired:
                log.info("rolling restart: worker %d was removed", self._rolling)
                self._rolling = None
            else:
                r = self._running.get(self._rolling)
                if r is None or r.stopping is not None or not r.polled:
                    return  # the old one is stopping, or its replacement has not polled yet
                log.info("rolling restart: worker %d replaced", self._rolling)
                self._rolling = None
        while self._roll:
            slot = self._roll.popleft()
            if slot not in self._desired:
                continue
            self._rolling = slot
            old = self._running.get(slot)
            # A worker already stopping or restarting (recycled, crashed) is not stopped again:
            # its replacement, started after the SIGHUP, completes this step of the roll.
            if old is not None and old.stopping is None:
                self._stop_worker(old, "rolling")
            return

    def _stop_worker(self, r: _Running, why: str) -> None:
        r.stopping = why
        r.kill_at = time.monotonic() + self.options["graceful_timeout_s"]
        with contextlib.suppress(ProcessLookupError):
            r.process.terminate()

    # --- signals -------------------------------------------------------------------------

    def _apply_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if signum == signal.SIGINT and self._stop_deadline is not None:
            log.warning("second SIGINT: killing the workers now")
            self._result = (EXIT_INTERRUPTED, "interrupted")
            for r in self._running.values():
                r.process.kill()
            self._stop_deadline = time.monotonic() + 5.0
        elif signum in (signal.SIGTERM, signal.SIGINT):
            log.info("%s: stopping the workers (at most %.1f s)", name,
                     self.options["graceful_timeout_s"])
            self._begin_stop(EXIT_OK, f"stopped by {name}")
        elif self._stop_deadline is not None:
            return
        elif signum == signal.SIGTTIN:
            slot = min(set(range(len(self._desired) + len(self._running) + 1))
                       - self._desired - set(self._running))
            self._desired.add(slot)
            log.info("SIGTTIN: adding worker %d (%d workers)", slot, len(self._desired))
        elif signum == signal.SIGTTOU:
            if len(self._desired) <= 1:
                log.warning("SIGTTOU: the pool keeps at least one worker")
                return
            slot = max(self._desired)
            self._desired.discard(slot)
            log.info("SIGTTOU: removing worker %d (%d workers)", slot, len(self._desired))
            leaving = self._running.get(slot)
            if leaving is not None:
                self._stop_worker(leaving, "removed")
        elif signum == signal.SIGHUP:
            log.info("SIGHUP: restarting the workers one at a time")
            self._roll.extend(s for s in sorted(self._desired) if s not in self._roll)

    def _begin_stop(self, status: int, reason: str) -> None:
        if self._result is None or self._result[0] == EXIT_OK:
            self._result = (status, reason)
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self.options["graceful_timeout_s"]
        for r in self._running.values():
            if r.process.exitcode is None:
                r.stopping = "shutdown"
                with contextlib.suppress(ProcessLookupError):
                    r.process.terminate()

    @contextlib.contextmanager
    def _signal_handlers(self) -> Iterator[None]:
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield  # no handlers off the main thread: use request() instead
            return
        sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU)
        previous = {s: signal.signal(s, lambda signum, frame: self._signals.append(signum))
                    for s in sigs}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)

    @contextlib.contextmanager
    def _metrics_served(self) -> Iterator[None]:
        if self.options["metrics_port"] is None:
            yield
            return
        from groupkit.workers.pool_metrics import PoolMetrics

        with PoolMetrics.serving(self.options["metrics_port"],
                                 self.options["metrics_host"]) as metrics:
            self._metrics = metrics
            self.metrics_address = metrics.address
            try:
                yield
            finally:
                self._metrics = None

    def _kill_all(self) -> None:
        for r in list(self._running.values()):
            if r.process.exitcode is None:
                log.warning("worker %d (pid %d) still running as the pool ends: killing it",
                            r.slot, r.process.pid)
                r.process.kill()
            r.process.join(10)
            r.conn.close()
        self._running.clear()


def _check_options(options: dict[str, Any]) -> None:
    for name in ("graceful_timeout_s", "crash_loop_window_s", "backoff_max_s"):
        if not isinstance(options[name], (int, float)) or options[name] <= 0:
            raise ConfigError(f"{name} must be a positive number of seconds, not"
                              f" {options[name]!r}")
    for name in ("backoff_initial_s", "liveness_grace_s"):
        if not isinstance(options[name], (int, float)) or options[name] < 0:
            raise ConfigError(f"{name} must be a number of seconds (0 or more), not"
                              f" {options[name]!r}")
    count = options["crash_loop_count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"crash_loop_count must be a whole number of at least 1, not {count!r}")
    limit = options["max_records_per_worker"]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"max_records_per_worker must be a whole number of at least 1 or None,"
                          f" not {limit!r}")


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """Set ``name`` in os.environ while a worker is started (spawn copies the environment)."""
    if value is None:
        yield
        return
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
