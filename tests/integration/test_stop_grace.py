"""A GroupConsumer process stops within its stop grace after SIGTERM or SIGINT, also when the
broker died or hangs under it, and a second signal stops it at once.

Real processes, real signals, a real broker that each test kills (or freezes with SIGSTOP).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groupkit.testing import LocalBroker
from tests.support.broker_data import make_topic
from tests.support.broker_faults import freeze

pytestmark = pytest.mark.broker

WORKER = Path(__file__).with_name("grace_worker.py")
GRACE_MS = 3000
#: Interpreter start-up is not part of it, but exiting is: a generous bound for that.
EXIT_SLACK = 1.0


def start_worker(broker: LocalBroker, topic: str) -> subprocess.Popen[str]:
    make_topic(broker.bootstrap_servers, topic, 2, 10)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), broker.bootstrap_servers, topic, f"g-{topic}",
         str(GRACE_MS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).parents[2])
    assigned = threading.Event()

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == "assigned":
                assigned.set()
    threading.Thread(target=watch, daemon=True).start()
    if not assigned.wait(45):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"the worker did not get partitions within 45 s:\n{err[-3000:]}")
    return proc


def exit_time(proc: subprocess.Popen[str], since: float, limit: float) -> float:
    try:
        proc.wait(limit + 10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    return time.monotonic() - since


@pytest.mark.parametrize("fault", ["killed", "stopped"])
def test_sigterm_stops_within_the_grace_while_the_broker_is_down(
        broker: LocalBroker, unique_name: Callable[[str], str], fault: str) -> None:
    proc = start_worker(broker, unique_name("grace"))
    if fault == "killed":
        broker.stop()
    else:
        freeze(broker)
    time.sleep(0.5)  # let a commit start against the dead broker: the worst moment to stop
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    took = exit_time(proc, sent, GRACE_MS / 1000)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert took < GRACE_MS / 1000 + EXIT_SLACK, f"exited {took:.1f} s after SIGTERM:\n{err[-3000:]}"
    assert proc.returncode == 0, err[-3000:]
    assert "committing and leaving the group within 3.0 s" in err


def test_a_second_sigint_stops_at_once(broker: LocalBroker,
                                       unique_name: Callable[[str], str]) -> None:
    proc = start_worker(broker, unique_name("grace"))
    freeze(broker)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    took = exit_time(proc, sent, 1.0)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert took < 1.0, f"exited {took:.1f} s after the second SIGINT:\n{err[-3000:]}"
    assert "KeyboardInterrupt" in err and "second SIGINT" in err
    assert proc.returncode != 0
