"""Faults done to a real local broker: freeze it (SIGSTOP: the kernel still accepts connections
but nothing answers, the slow failure) and thaw it again."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from groupkit.testing import LocalBroker


def _all_threads_stopped(pid: int) -> bool:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        # The state letter follows the ")" that closes the command name in /proc/.../stat.
        return all((task / "stat").read_text().rpartition(")")[2].split()[0] in "tT"
                   for task in tasks)
    except (FileNotFoundError, ProcessLookupError):
        return False


def freeze(broker: LocalBroker, timeout: float = 5.0) -> None:
    """SIGSTOP the broker and return once every one of its threads has stopped: the signal is
    delivered asynchronously, and a thread still running could answer one more request."""
    pid = broker.pid
    assert pid is not None, "the broker is not running"
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not _all_threads_stopped(pid):
        if time.monotonic() >= deadline:
            raise AssertionError(f"the broker (pid {pid}) did not stop within {timeout} s")
        time.sleep(0.005)


def thaw(broker: LocalBroker) -> None:
    """SIGCONT the broker (harmless when it runs)."""
    if broker.pid is not None:
        os.kill(broker.pid, signal.SIGCONT)
