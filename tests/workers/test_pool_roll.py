"""A rolling restart (SIGHUP) replaces every worker, including one caught between processes.

The supervisor's roll is driven here without processes: stand-in process objects record being
asked to stop, and a worker's beat says whether it has polled since it started.
"""

from __future__ import annotations

import logging
import signal

import attrs
import pytest

from groupkit.workers import Pool
from groupkit.workers.pool import _Running
from tests.support.pool_workers import RecordingWorker


@attrs.define
class _Process:
    pid: int
    terminated: bool = False
    exitcode: int | None = None

    def terminate(self) -> None:
        self.terminated = True


@attrs.define
class _Beat:
    value: float


def _running(slot: int, polled: bool) -> _Running:
    return _Running(slot, _Process(100 + slot), _Beat(2.0 if polled else 1.0), None, 1.0)


@pytest.fixture
def pool() -> Pool:
    made = Pool(RecordingWorker, processes=2)
    made._desired = {0, 1}
    return made


def test_a_worker_restarting_when_sighup_arrives_is_replaced_before_the_next_is_stopped(
        pool: Pool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="groupkit.workers")
    # Worker 0 was recycled and waits for its restart; worker 1 runs.
    pool._running = {1: _running(1, polled=True)}
    pool._apply_signal(signal.SIGHUP)
    pool._advance_roll()
    assert not pool._running[1].process.terminated, "worker 1 stopped before 0 is back"

    pool._running[0] = _running(0, polled=False)  # the replacement started ...
    pool._advance_roll()
    assert not pool._running[1].process.terminated
    pool._running[0] = _running(0, polled=True)  # ... and polled
    pool._advance_roll()
    assert "rolling restart: worker 0 replaced" in caplog.text
    assert pool._running[1].process.terminated and pool._running[1].stopping == "rolling"

    del pool._running[1]
    pool._running[1] = _running(1, polled=True)
    pool._advance_roll()
    log = caplog.text
    assert log.index("worker 0 replaced") < log.index("rolling restart: worker 1 replaced")
    assert pool._rolling is None and not pool._roll


def test_a_worker_removed_during_the_roll_does_not_hold_it_up(
        pool: Pool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="groupkit.workers")
    pool._running = {0: _running(0, polled=True), 1: _running(1, polled=True)}
    pool._apply_signal(signal.SIGHUP)
    pool._advance_roll()
    assert pool._running[0].stopping == "rolling"
    pool._desired.discard(0)
    del pool._running[0]
    pool._advance_roll()
    assert "rolling restart: worker 0 was removed" in caplog.text
    assert pool._running[1].stopping == "rolling"
