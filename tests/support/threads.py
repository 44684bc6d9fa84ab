"""Run one callable on several threads at once, for tests of what many threads may do together."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_at_once(target: Callable[[], object], threads: int, times: int = 1,
                timeout: float = 30.0) -> list[BaseException]:
    """Call ``target`` ``times`` times on each of ``threads`` threads released together; returns
    what any call raised (a thread still running after ``timeout`` seconds fails the test)."""
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run() -> None:
        try:
            start.wait(timeout)
            for _ in range(times):
                target()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout)
    assert not any(w.is_alive() for w in workers), f"a thread ran past {timeout} s"
    return errors
